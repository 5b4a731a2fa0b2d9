import ArgumentParser
import Coffer
import CofferKeychain
import CofferStore
import Foundation

/// `coffer store passwd`, `slots`, `add-slot` and `remove-slot`: the ways
/// into a store (docs/store.md, "Unlock slots"). Each is one small write
/// of the store's state; no record is rewritten.
struct StorePasswd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract:
            "Lock the store with a new passphrase or KEK alone (every other slot goes) and add a new primary key.",
        discussion: """
            No record is rewritten. After a leaked passphrase, run 'coffer store rotate' next: it seals every \
            value again under the new primary key and disables the older ones.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @OptionGroup var new: NewSecretOptions

    func validate() throws { try new.validate(with: kek, what: "a store") }

    func run() async throws {
        let opened = try await store.open(kek)
        defer { try? opened.close() }
        let secret = try await new.secret(kek, prompt: "New store passphrase")
        let primary = try await opened.changeSecret(to: secret, kdf: try new.passwordKDF)
        StandardError.write(
            "New primary key \(String(format: "%08x", primary)); one key slot now. Values sealed before stay under their keys until 'coffer store rotate'\n"
        )
    }
}

struct StoreSlots: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slots", abstract: "List the store's key slots: their numbers and what kind of secret opens each.")
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions

    func run() async throws {
        let opened = try await store.open(kek)
        defer { try? opened.close() }
        for (index, slot) in try opened.keySlots().enumerated() {
            print(
                "\(index)  "
                    + (slot.kdf.map { "passphrase, \($0.description)" }
                        ?? "key (a KEK, recovery key or key server's key)"))
        }
    }
}

struct StoreAddSlot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-slot",
        abstract:
            "Add a way into the store beside the others: a passphrase, a KEK, a key server's key or a recovery key.",
        discussion: """
            With --recovery-key, a new recovery key is made and printed once on standard output: write it down. \
            It opens the store as a --kek-file holding its text.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @OptionGroup var new: NewSecretOptions
    @Flag(help: "Make a recovery key, add a slot for it and print it (once).") var recoveryKey = false

    func validate() throws {
        try new.validate(with: kek, what: "a store")
        if recoveryKey && new.given > 0 { throw ValidationError("--recovery-key makes its own key: give no --new-…") }
    }

    func run() async throws {
        let opened = try await store.open(kek)
        defer { try? opened.close() }
        if recoveryKey {
            let recovery = try await opened.addRecoveryKey()
            print(recovery.text)
            StandardError.write(
                "Added key slot \(try opened.keySlots().count - 1) for this recovery key. It is shown once: keep it somewhere safe, apart from the store\n"
            )
            return
        }
        let secret = try await new.secret(kek, prompt: "New store passphrase")
        let index = try await opened.addSlot(for: secret, kdf: try new.passwordKDF)
        StandardError.write("Added key slot \(index)\n")
    }
}

struct StoreRemoveSlot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-slot",
        abstract: "Remove one key slot (its number from 'coffer store slots'); the last one stays.",
        discussion: """
            The store's data key does not change: this retires a secret that was never exposed. For one that \
            leaked, use 'coffer store passwd' and then 'coffer store rotate'.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The slot's number.") var slot: Int

    func run() async throws {
        let opened = try await store.open(kek)
        defer { try? opened.close() }
        try opened.removeSlot(at: slot)
        StandardError.write("Removed key slot \(slot)\n")
    }
}
