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
    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the key ring's passphrase (or KEK) and add a new primary key; no value is re-encrypted.")
        @OptionGroup var unlock: KeyRingUnlock
        @OptionGroup var kek: KEKOptions
        @Option(help: "The new passphrase.") var newPassphraseFile: String?
        @Option(help: "A new 32-byte key-encryption key instead.") var newKEKFile: String?
        @Option(help: "Or a symmetric256 key in this keychain (made when missing), under --new-kek-tag.")
        var newKEKKeychain: String?
        @Option(help: "The new KEK's application tag in --new-kek-keychain.") var newKEKTag: String?
        @Option(help: "file or secret-service (with --new-kek-keychain).")
        var newKEKKeychainBackend: KeychainBackend = .file
        @Option(help: "That file keychain's passphrase.") var newKEKKeychainPassphraseFile: String?
        @Option(help: "That file keychain's 32-byte key file.") var newKEKKeychainKeyFile: String?
        @Flag(
            help:
                "Move to the current version of the key server's key (the ring opens with --kek-server's, any version)."
        )
        var newKEKServer = false
        @Option(help: "The KDF for the new passphrase: scrypt or pbkdf2.")
        var kdf = "scrypt"

        func validate() throws {
            if [newPassphraseFile, newKEKFile, newKEKKeychain].compactMap({ $0 }).count + (newKEKServer ? 1 : 0) > 1 {
                throw ValidationError(
                    "give one of --new-passphrase-file, --new-kek-file, --new-kek-keychain and --new-kek-server")
            }
            if newKEKServer && !kek.server.given {
                throw ValidationError("--new-kek-server moves a ring opened with --kek-server")
            }
            if (newKEKKeychain == nil) != (newKEKTag == nil) {
                throw ValidationError("--new-kek-keychain and --new-kek-tag go together")
            }
        }

        func run() throws {
            let secret: UnlockSecret
            if newKEKServer, let current = try kek.server.currentSecret() {
                secret = current
            } else if let newKEKKeychain, let newKEKTag {
                let keychain = try KeychainOptions.open(
                    name: newKEKKeychain, backend: newKEKKeychainBackend,
                    passphraseFile: newKEKKeychainPassphraseFile, keyFile: newKEKKeychainKeyFile)
                secret = try KEKOptions.keychainKEK(keychain, name: newKEKKeychain, tag: newKEKTag, creating: true)
            } else {
                secret = try SecretSource.unlock(
                    keyFile: newKEKFile, passphraseFile: newPassphraseFile, keyWhat: "the new KEK file",
                    prompt: "New key ring passphrase", confirm: true)
            }
            let kdf = try PasswordKDF.named(kdf)
            let primary = try unlock.modify(kek) { file in try file.changeSecret(to: secret, kdf: kdf) }
            StandardError.write(
                "New primary key \(String(format: "%08x", primary)); values sealed before stay under their keys until rewrapped\n"
            )
        }
    }
}
