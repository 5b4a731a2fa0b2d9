#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import CofferPKCS11
import Foundation

extension KEK {
    /// Moves the KEK ring to another root: from a passphrase (or a
    /// keychain key) to an HSM key, from one HSM key to another, or back
    /// to a passphrase.
    struct Reseal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seals the KEK ring under another root: an HSM key (made when absent) or a passphrase.",
            discussion: """
                The ring's keys stay as they are; only what unlocks DIR/kek.ckr changes (a new data key, one \
                slot for the new root), in one atomic write: killed at any point, the ring is the old or the new \
                one, and running the command again finishes it (or says it is done). Afterwards every server \
                and command takes the new root's options; copy kek.ckr to each replica and restart them. \
                An older copy of kek.ckr still opens under the old root: keep or destroy the old root as your \
                backups require.
                """)
        @OptionGroup var data: DataOptions

        @Option(
            help: ArgumentHelp("Seal under this HSM key's label (made in the token when absent).", valueName: "LABEL"))
        var toPkcs11Key: String?
        @Option(help: ArgumentHelp("Its PKCS#11 module (default: --kek-pkcs11-module).", valueName: "PATH"))
        var toPkcs11Module: String?
        @Option(help: ArgumentHelp("Its token's label (default: --kek-pkcs11-token).", valueName: "LABEL"))
        var toPkcs11Token: String?
        @Option(help: ArgumentHelp("Its token's PIN, from a file (default: --kek-pkcs11-pin-file).", valueName: "F"))
        var toPkcs11PinFile: String?
        @Option(help: ArgumentHelp("Seal under the passphrase in this file instead.", valueName: "F"))
        var toPassphraseFile: String?

        func run() async throws {
            let settings = try await data.settings()
            let (store, current) = try await data.locateRing(settings)
            do {
                try await reseal(current, settings)
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        }

        func reseal(_ current: ServerKEKRing, _ settings: ServerSettings) async throws {
            let (secret, name) = try target(settings)
            let next = current.unlocked(by: secret)
            let say: (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
            do {
                _ = try await current.read()
            } catch let error as CofferError
                where [.wrongPassword, .invalidArgument, .keyNotFound].contains(error.code)
            {
                // Already moved (a run that finished, or one killed after its write)?
                guard (try? await next.read()) != nil else { throw error }
                say("\(current.place) is already sealed under \(name): nothing to do")
                return
            }
            try await current.modify { file in _ = try file.changeSecret(to: secret) }
            _ = try await next.read()
            say("\(current.place) is sealed under \(name); start servers and commands with its options from now on")
        }

        /// The new root and its name for the messages; an HSM key is made
        /// in its token when absent.
        func target(_ settings: ServerSettings) throws -> (UnlockSecret, String) {
            switch (toPkcs11Key, toPassphraseFile) {
            case (let label?, nil):
                let module = try settings.required(
                    toPkcs11Module ?? data.kekPkcs11Module, "kek.pkcs11.module", flag: "--to-pkcs11-module")
                let token = try settings.required(
                    toPkcs11Token ?? data.kekPkcs11Token, "kek.pkcs11.token", flag: "--to-pkcs11-token")
                let pinFile = try settings.required(
                    toPkcs11PinFile ?? data.kekPkcs11PinFile, "kek.pkcs11.pin.file", flag: "--to-pkcs11-pin-file")
                let key = PKCS11Key(
                    module: module, token: token, label: label,
                    pin: try ServerFiles.passphrase(pinFile, what: "the PIN file"))
                if try key.prepare(creating: true) {
                    FileHandle.standardError.write(Data("made \(key) (sensitive, not extractable)\n".utf8))
                }
                return (.pkcs11(key), key.description)
            case (nil, let file?):
                return (.password(try ServerFiles.passphrase(file)), "the passphrase in \(file)")
            default:
                throw ValidationError("give one of --to-pkcs11-key and --to-passphrase-file")
            }
        }
    }
}
#endif
