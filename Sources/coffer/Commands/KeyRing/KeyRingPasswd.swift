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

extension KeyRingCommand {
    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the key ring's passphrase (or KEK) and add a new primary key; no value is re-encrypted.")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions
        @OptionGroup var new: NewSecretOptions

        func validate() throws { try new.validate(with: kek, what: "a ring") }

        func run() async throws {
            let secret = try await new.secret(kek, prompt: "New key ring passphrase")
            let kdf = try new.passwordKDF
            let primary = try await unlock.modify(kek) { file in try file.changeSecret(to: secret, kdf: kdf) }
            StandardError.write(
                "New primary key \(String(format: "%08x", primary)); values sealed before stay under their keys until rewrapped\n"
            )
        }
    }
}
