import ArgumentParser
import Coffer
import CofferKeychain
import CofferStore
import Foundation

/// `coffer store`: records with sealed and clear fields (docs/store.md).
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Keep records whose private fields are sealed and whose other fields stay clear and searchable.",
        discussion: """
            The store is one SQLite file. Its key ring is sealed inside it under the passphrase, KEK file or \
            keychain KEK you give (never on the command line). Records are JSON objects: text fields as strings, \
            integers as numbers, bytes as base64 strings. See docs/store.md.
            """,
        subcommands: [
            StoreInit.self, StorePut.self, StoreGet.self, StoreFind.self, StoreUpdate.self, StoreDelete.self,
            StoreVerify.self, StorePlanCommand.self, Rotate.self, Reindex.self, StoreMigrate.self,
            StoreAcceptRollback.self, StoreAlter.self, StoreImport.self, StorePasswd.self, StoreSlots.self,
            StoreAddSlot.self, StoreRemoveSlot.self, StoreWatch.self, StoreAnchorCommand.self, StoreShredTenant.self,
        ]
    )
}

/// Where the store is. What unlocks it is ``KEKOptions``, as for `coffer keyring`,
/// beside these in each command (see there why).
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: "The store: a SQLite file, or postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME].")
    var database: String

    @Option(
        name: .customLong("db-password-file"),
        help: "The PostgreSQL password, from this file (else PGPASSWORD; never on the command line).")
    var databasePasswordFile: String?

    @OptionGroup var anchor: StoreAnchorOptions
    @OptionGroup var tenantKeys: TenantKeyHolderOptions

    func validate() throws {
        if databasePasswordFile != nil && !isPostgres {
            throw ValidationError("--db-password-file is for a postgres:// store")
        }
        if isPostgres && !PostgresStores.available { throw ValidationError(PostgresStores.missing.description) }
    }

    var isPostgres: Bool { PostgresURL.names(database) }

    /// The PostgreSQL password: the file's first line, or PGPASSWORD.
    func databasePassword() throws -> String? {
        PostgresURL.password(
            file: try databasePasswordFile.map {
                Array(try Input.readAll(path: $0, what: "the database password file", secret: true))
            })
    }

    func secret(_ kek: KEKOptions, confirm: Bool, creating: Bool = false) async throws -> UnlockSecret {
        if let held = try kek.hsm(creating: creating) { return held }
        if let (_, secret) = try kek.keychain(creating: creating) { return secret }
        return try await kek.secret(confirm: confirm, prompt: "Store passphrase")
    }

    /// The store, checked against its anchors and kept at them unless `anchored` is false.
    func open(_ kek: KEKOptions, anchored: Bool = true) async throws -> RecordStore {
        let store = try await unanchored(kek)
        return anchored ? try anchor.keep(store) : store
    }

    /// The store opened without a key server (a keychain's KEK, a KEK file,
    /// a passphrase), checked against its anchors: synchronous, for a
    /// caller that opens it on its own thread (`store import`).
    func openLocally(_ kek: KEKOptions) throws -> RecordStore {
        let secret = try kek.keychain(creating: false)?.1 ?? kek.localSecret(confirm: false, prompt: "Store passphrase")
        return try anchor.keep(try open(secret: secret))
    }

    /// The store opened with `secret`, not anchored yet.
    func open(secret: UnlockSecret) throws -> RecordStore {
        if isPostgres {
            return try tenantKeys.hold(
                try PostgresStores.open(database, password: try databasePassword(), secret: secret))
        }
        return try tenantKeys.hold(try RecordStore.open(sqlite: database, secret: secret))
    }

    private func unanchored(_ kek: KEKOptions) async throws -> RecordStore {
        let open = { (secret: UnlockSecret) throws -> RecordStore in try self.open(secret: secret) }
        // Opened with an older version of the server's key, the store moves
        // to the current one: its slot is rewrapped, no record rewritten.
        if kek.kekKeychain == nil,
            let store = try await kek.server.open(open, moving: { try $0.replaceSlot(openedBy: $1, with: $2) })
        {
            return store
        }
        return try await open(try secret(kek, confirm: false))
    }

    func create(_ kek: KEKOptions, schema: StoreSchema, kdf: PasswordKDF) async throws -> RecordStore {
        let secret = try await secret(kek, confirm: true, creating: true)
        try anchor.reach()
        if isPostgres {
            return try anchor.keep(
                try tenantKeys.hold(
                    try PostgresStores.create(
                        database, password: try databasePassword(), schema: schema, secret: secret, kdf: kdf)))
        }
        return try await anchor.keep(
            try tenantKeys.hold(try RecordStore.create(sqlite: database, schema: schema, secret: secret, kdf: kdf)))
    }
}

struct StoreInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make a new store from a schema file (never overwrites), or adopt a plain database.")
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The schema, JSON (docs/store.md).") var schema: String
    @Flag(help: "Make the existing database --db a store, its tables as the schema describes them (every field clear).")
    var adopt = false
    @Option(help: "scrypt (default) or pbkdf2, for a passphrase.") var kdf = "scrypt"

    func run() async throws {
        let schema = try StoreSchema(json: try Input.readAll(path: schema, what: "the schema"))
        if adopt {
            let secret = try await store.secret(kek, confirm: true, creating: true)
            if store.isPostgres {
                _ = try PostgresStores.adopt(
                    store.database, password: try store.databasePassword(), schema: schema, secret: secret,
                    kdf: try PasswordKDF.named(kdf))
            } else {
                _ = try RecordStore.adopt(
                    sqlite: store.database, schema: schema, secret: secret, kdf: try PasswordKDF.named(kdf))
            }
        } else {
            _ = try await store.create(kek, schema: schema, kdf: try PasswordKDF.named(kdf))
        }
    }
}

struct StorePut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Add records (a JSON object, or JSON lines in one transaction per batch); prints each primary key.",
        discussion: """
            JSON lines of any length are read a few MiB at a time. Each batch of --batch records is checked whole, \
            then written in one transaction, and its primary keys are printed once it is committed. A bad line \
            stops the import before its batch, naming the line: the keys printed are exactly the records stored.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table.") var table: String
    @Option(help: "Records per transaction.") var batch = 25000
    @Argument(help: "The records file (standard input when absent).")
    var file: String = "-"

    func validate() throws {
        guard batch > 0 else { throw ValidationError("--batch is at least 1") }
    }

    func run() async throws {
        let input = try Input(path: file)
        defer { input.finish() }
        var keyOnly: StoreSchema.Table?
        // With a key server's KEK the store is opened first (the key is
        // fetched); otherwise on this thread while the input is read.
        let early = kek.server.given ? try await store.open(kek) : nil
        let open = {
            let opened = try early ?? store.openLocally(kek)
            keyOnly = try opened.schema.table(table).keyOnly
            return opened
        }
        try RecordJSONLines(batch: batch).put(
            from: input.source, regularFile: input.size != nil, into: table, open: open
        ) { committed in
            let keyOnly = keyOnly!
            let prefix = "{" + RecordJSON.quoted(keyOnly.primaryKey) + ":"
            var keys = ""
            for key in committed {
                if let number = key.integerValue {
                    keys += prefix + String(number) + "}\n"
                } else {
                    keys += RecordJSON.line([keyOnly.primaryKey: key], table: keyOnly) + "\n"
                }
            }
            print(keys, terminator: "")
            fflush(nil)  // the keys of a committed batch leave before the next is committed
        }
    }
}

struct StoreGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print one record as JSON, its sealed fields opened (exit 1 when missing).")
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @OptionGroup var row: StoreRow

    func run() async throws {
        print(
            try await row.act(store, kek) { store, table, key in
                try store.get(table.name, id: key).map { RecordJSON.line($0, table: table) }
            })
    }
}

struct StoreUpdate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change fields of one record (a JSON object of the fields to change); prints the record.")
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @OptionGroup var row: StoreRow
    @Argument(help: "The changes file (standard input when absent).")
    var file: String = "-"

    func run() async throws {
        // The changes are read and parsed before the key derivation, so a
        // malformed file is said at once.
        let object = try RecordJSON.object(utf8: try Input.readAll(path: file, what: "the changes"))
        let line = try await row.act(store, kek) { store, table, key in
            let changes = try RecordJSON.record(object, table: table)
            return try store.update(table.name, id: key, set: changes).map { RecordJSON.line($0, table: table) }
        }
        print(line)
    }
}

struct StoreDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete one record (exit 1 when missing).")
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @OptionGroup var row: StoreRow

    func run() async throws {
        try await row.act(store, kek) { store, table, key in try store.delete(table.name, id: key) ? () : nil }
    }
}

struct StoreVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Open every sealed cell, recompute every index entry and check each table's record set (exit 3 naming what fails)."
    )
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions

    func run() async throws {
        // Checked against its anchors after the rows, so that a digest that
        // does not open is reported with everything else.
        let opened = try await store.open(kek, anchored: false)
        let terminal = isatty(STDERR_FILENO) == 1
        let result = try opened.verify { rows in
            if terminal { StandardError.write("\rcoffer: verified \(rows) rows") }
        }
        if terminal { StandardError.write("\n") }
        var problems = result.problemCount
        print(result.description)
        for problem in result.problems { print("  " + problem) }
        if result.problemCount > result.problems.count {
            print("  … and \(result.problemCount - result.problems.count) more")
        }
        if result.isIntact {
            do { _ = try store.anchor.keep(opened) } catch let error as CofferError {
                print("  anchor: \(error)")
                problems += 1
            }
        }
        guard problems == 0 else { throw CLIFailure("the store has \(problems) problems", status: 3) }
    }
}
