import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct KeyRingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keyring",
        abstract: "Create and manage key rings: data keys sealed under a passphrase or a KEK file.",
        subcommands: [
            New.self, Rotate.self, List.self, Disable.self, Enable.self, Destroy.self,
            Passwd.self,
            Upgrade.self, AcceptRollback.self,
        ])
}

extension KeyRingCommand {
    /// A key id as `keyring list` prints it: up to 8 hex digits.
    static func keyID(_ text: String) throws -> UInt32 {
        guard text.count <= 8, let value = UInt32(text, radix: 16) else {
            throw ValidationError("a key id is up to 8 hex digits")
        }
        return value
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a key ring with one primary key (never overwrites).")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions
        @Option(
            help: "The passphrase KDF: scrypt (default, N=2^17 r=8 p=1) or pbkdf2 (600,000 rounds of HMAC-SHA-256).")
        var kdf = "scrypt"

        func run() async throws {
            let store = try await unlock.store(kek, confirm: true, creating: true)
            let file = try await store.create(KeyRing(), kdf: try PasswordKDF.named(kdf))
            StandardError.write(
                "Created \(unlock.keyring): primary key \(String(format: "%08x", file.keyRing.primaryID))\n")
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a new primary key; older keys stay active.")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions

        func run() async throws {
            var id: UInt32 = 0
            try await unlock.modify(kek) { file in try file.update { id = try $0.rotate() } }
            print(String(format: "%08x", id))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List key ids, states and creation times (never key bytes).")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions

        func run() async throws {
            let file = try await unlock.unlockFile(kek)
            let formatter = ISO8601DateFormatter()
            for key in file.keyRing.keys {
                print(
                    "\(String(format: "%08x", key.id))  \(key.state.description.padding(toLength: 8, withPad: " ", startingAt: 0))  \(formatter.string(from: key.created))"
                )
            }
            print("# protected by \(file.kdf?.description ?? "a 32-byte key-encryption key")")
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a key: values sealed under it no longer open.")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions
        @Argument(help: "The key id (8 hex digits, as list prints it).")
        var id: String

        func run() async throws {
            let value = try KeyRingCommand.keyID(id)
            try await unlock.modify(kek) { file in try file.update { try $0.disable(value) } }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Enable a disabled key again: values sealed under it open once more (rewrap them, then disable it).")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions
        @Argument(help: "The key id (8 hex digits, as list prints it); the key must be disabled.")
        var id: String

        func run() async throws {
            let value = try KeyRingCommand.keyID(id)
            try await unlock.modify(kek) { file in try file.update { try $0.enable(value) } }
        }
    }

    struct Destroy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a disabled key's bytes from the key ring: values sealed under it never open again.")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions
        @Flag(help: "State that every value sealed under the key was rewrapped or deleted.") var noValuesRemain = false
        @Flag(help: "Destroy the key even if values sealed under it may remain.")
        var force = false
        @Argument(help: "The key id (8 hex digits, as list prints it); the key must be disabled.")
        var id: String

        func run() async throws {
            let value = try KeyRingCommand.keyID(id)
            do {
                try await unlock.modify(kek) { file in
                    try file.update { try $0.destroy(value, noValuesRemain: noValuesRemain, force: force) }
                }
            } catch let error as CofferError where error.code == .refused {
                throw CLIFailure(
                    error.description,
                    hint: "rewrap the values (coffer rewrap), then pass --no-values-remain; or --force to lose them",
                    status: CLIFailure.refusedStatus)
            }
            StandardError.write(
                "Destroyed key \(String(format: "%08x", value)); older copies of the ring still hold it, so delete those too\n"
            )
        }
    }

    struct AcceptRollback: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Accept the key ring file as it is now, although older than one already written (a backup restored on purpose)."
        )
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions

        func run() async throws {
            let generation = try await unlock.store(kek).acceptCurrentGeneration()
            StandardError.write("Accepted \(unlock.keyring) at generation \(generation)\n")
        }
    }

    struct Upgrade: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-derive the passphrase key with today's default parameters.")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions

        func run() async throws {
            // One store, so a passphrase typed at the prompt is asked once.
            let store = try await unlock.store(kek)
            guard store.secret.isPassword else {
                throw CLIFailure(
                    "a key ring locked with a KEK file has no passphrase parameters to upgrade", status: 64)
            }
            try await store.modify { file in try file.upgrade(store.secret) }
        }
    }
}
