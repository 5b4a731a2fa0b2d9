import ArgumentParser
import Coffer
import CofferKeyClient
import CofferStore
import Foundation

/// Where every `coffer store` command keeps the store's state outside its
/// database (docs/store.md, "Anchors"): always this user's state folder,
/// and a coffer-server when one is named.
struct StoreAnchorOptions: ParsableArguments {
    @Option(
        name: .customLong("anchor-server"),
        help: "Also keep the store's state at this coffer-server (https://…; else COFFER_ANCHOR_SERVER).")
    var server: String?

    @Option(
        name: .customLong("anchor-token-file"),
        help:
            "The operator token (scope stores:anchor) for the anchor server, from this file (else COFFER_ANCHOR_TOKEN_FILE)."
    )
    var tokenFile: String?

    @Option(
        name: .customLong("anchor-ca-file"),
        help: ArgumentHelp(
            "Trust the anchor server's certificate only when this CA (PEM) issued it (else COFFER_ANCHOR_CA_FILE).",
            valueName: "FILE"))
    var caFile: String?

    /// The anchors a store opened by the CLI keeps: checked before the
    /// command reads anything, published after each commit.
    func anchors() throws -> [any StoreAnchor] {
        var anchors: [any StoreAnchor] = [FolderStoreAnchor.user]
        if let server = try OperatorServer.named(
            "anchor", variable: "ANCHOR", scope: "stores:anchor", server: server, tokenFile: tokenFile, caFile: caFile)
        {
            anchors.append(
                try KeyServerStoreAnchor(
                    server: server.url, operatorToken: server.token, transport: server.transport))
        }
        return anchors
    }

    /// A command is short: every commit is published, and a read checks
    /// at most once a second.
    static let policy = StoreAnchorPolicy(interval: 1, commits: 1)

    /// Asks each anchor for a store that does not exist yet (a fresh
    /// random id): before `init` makes a store, an anchor that cannot be
    /// reached, or refuses the token, stops it with nothing made.
    func reach() throws {
        let probe = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        for anchor in try anchors() { _ = try anchor.anchoredState(store: probe) }
    }

    func keep(_ store: RecordStore) throws -> RecordStore {
        for anchor in try anchors() { try store.keepAnchored(at: anchor, policy: Self.policy) }
        return store
    }
}

struct StoreAnchorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "anchor",
        abstract: "The store's state as its database and its anchors hold it.",
        subcommands: [StoreAnchorStatus.self])
}

struct StoreAnchorStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the store's state in its database and at each anchor (exit 3 when the database is older).")
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions

    func run() async throws {
        let opened = try await store.open(kek, anchored: false)
        defer { try? opened.close() }
        let database = try opened.anchorState()
        print("store     \(opened.storeID)")
        print("database  \(database)")
        var older = false
        for anchor in try store.anchor.anchors() {
            guard let anchored = try anchor.anchoredState(store: opened.storeID) else {
                print("anchor    \(anchor.location): nothing anchored yet")
                continue
            }
            let order = database.compared(to: anchored)
            older = older || order == .older || order == .forked
            let verdict =
                switch order {
                case .same: "the same as the database"
                case .newer: "behind the database (published at the next commit)"
                case .older: "NEWER than the database: an older copy of it was put back"
                case .forked: "not one history with the database: it was restored and written since"
                }
            print("anchor    \(anchor.location): \(anchored), \(verdict)")
        }
        if older { throw CLIFailure("the store's database is older than an anchored state", status: 3) }
    }
}

struct StoreAcceptRollback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept-rollback",
        abstract:
            "Accept the store's state as it is now, although older than one already written (a backup restored on purpose).",
        discussion: """
            The state must still verify under the store's keys; only its age is accepted. Records written after \
            the backup was taken are not brought back.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions

    func run() async throws {
        let secret = try await store.secret(kek, confirm: false)
        let epoch =
            store.isPostgres
            ? try PostgresStores.acceptCurrentState(
                store.database, password: try store.databasePassword(), secret: secret)
            : try RecordStore.acceptCurrentState(sqlite: store.database, secret: secret)
        // The anchors take the accepted state as it is, older or not.
        let accepted = try store.open(secret: secret)
        defer { try? accepted.close() }
        let state = try accepted.anchorState()
        for anchor in try store.anchor.anchors() { try anchor.accept(state, store: accepted.storeID) }
        StandardError.write("Accepted the store \(store.database) at epoch \(epoch)\n")
    }
}
