import Coffer
import CofferKeychain
import Crypto
import Foundation

/// Targets for Coffer's own formats: age files, key files, sealed values
/// and key rings with their slots, file keychains.
enum FileTargets {
    static let all: [FuzzTarget] = [age, keyFiles, sealed, keychain]

    // The identity of the CCTV vectors, so seeds from the test kit get past
    // the header; scrypt capped low so that a seed cannot stall a run.
    static let identities: [any Identity] = [
        try! X25519.Identity("AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0"),
        Scrypt.Identity(passphrase: Array("password".utf8), maximumWorkFactor: 12),
    ]

    static func isCoffer(_ error: any Error) -> Bool { error is CofferError }

    static let age = FuzzTarget(
        name: "age", summary: "age files: armor, header, stanzas, STREAM payload, inspect",
        run: { bytes in
            var source = BufferSource(bytes)
            var sink = BufferSink()
            FuzzTarget.expect("Age.decrypt", isCoffer) {
                try Age.decrypt(from: &source, to: &sink, identities: identities)
            }
            var again = BufferSource(bytes)
            FuzzTarget.expect("Age.inspect", isCoffer) { _ = try Age.inspect(&again) }
        },
        seeds: {
            let identity = identities[0] as! X25519.Identity
            return [false, true].compactMap { armored in
                (try? Age.encrypt(Data("fuzz".utf8), to: [identity.recipient], armored: armored)).map { Array($0) }
            }
        })

    static let keyFiles = FuzzTarget(
        name: "key-files", summary: "PEM, DER and OpenSSH keys; age identity and recipient files",
        run: { bytes in
            if let text = String(bytes: bytes, encoding: .utf8) {
                FuzzTarget.expect("AgeKeys.identities", isCoffer) { _ = try AgeKeys.identities(fileContents: text) }
                FuzzTarget.expect("AgeKeys.recipients", isCoffer) { _ = try AgeKeys.recipients(fileContents: text) }
                FuzzTarget.expect("OpenSSH.parsePublicKeyLine", isCoffer) { _ = try OpenSSH.parsePublicKeyLine(text) }
            }
            FuzzTarget.expect("KeyFiles.privateKey", isCoffer) { _ = try KeyFiles.privateKey(bytes) }
            FuzzTarget.expect("KeyFiles.publicKey", isCoffer) { _ = try KeyFiles.publicKey(bytes) }
            FuzzTarget.expect("OpenSSH.privateKey", isCoffer) {
                _ = try OpenSSH.privateKey(bytes: Array("openssh-key-v1\0".utf8) + bytes)
            }
            FuzzTarget.expect("OpenSSH.publicKey", isCoffer) { _ = try OpenSSH.publicKey(wire: bytes) }
        },
        seeds: {
            let identity = X25519.Identity()
            return [Array("\(identity)\n".utf8), Array("\(identity.recipient)\n".utf8)]
        })

    static let ring = KeyRing()
    static let ringSecret = SymmetricKey(size: .bits256)

    static let sealed = FuzzTarget(
        name: "sealed", summary: "sealed values (binary and cs1. text), key ring files and their slots",
        run: { bytes in
            FuzzTarget.expect("SealedValue", isCoffer) {
                _ = try ring.open(try SealedValue.binary(bytes), context: [1])
            }
            FuzzTarget.expect("SealedValue.keyID", isCoffer) { _ = try SealedValue.keyID(of: bytes) }
            _ = KeyRingFile.peekGeneration(bytes)
            FuzzTarget.expect("KeyRingFile", isCoffer) {
                _ = try KeyRingFile(contents: bytes, secret: .key(ringSecret))
            }
        },
        seeds: {
            var seeds: [[UInt8]] = []
            if let value = try? ring.seal(Data("fuzz".utf8), context: [1]) {
                seeds.append(Array(value))
                seeds.append(Array(SealedValue.text(value).utf8))
            }
            if let file = try? KeyRingFile(keyRing: ring, secret: .key(ringSecret)), let contents = try? file.contents()
            {
                seeds.append(Array(contents))
            }
            return seeds
        })

    /// A private folder for keychain files (FileKeychain reads files, and
    /// refuses folders open to others).
    static let keychainFolder: String = {
        let folder = NSTemporaryDirectory() + "coffer-fuzz-keychain-\(getpid())"
        try? FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder
    }()
    static let keychainKey = SymmetricKey(data: [UInt8](repeating: 7, count: 32))

    static let keychain = FuzzTarget(
        name: "keychain", summary: "file keychains: header, slots and items, read as FileKeychain reads them",
        run: { bytes in
            let path = keychainFolder + "/fuzz.keychain"
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            else { return }
            FuzzTarget.expect("FileKeychain", { $0 is KeychainError }) {
                _ = try FileKeychain.open(path: path, secret: .key(keychainKey), rollbackGuard: nil).copyMatching(
                    .password())
            }
        },
        seeds: {
            let path = keychainFolder + "/seed-\(UUID().uuidString).keychain"
            defer { try? FileManager.default.removeItem(atPath: path) }
            guard
                let keychain = try? FileKeychain.create(
                    path: path, secret: .key(keychainKey), rollbackGuard: nil),
                (try? keychain.add(.password(service: "fuzz", account: "me"), data: SecretBytes(Array("s".utf8))))
                    != nil,
                let bytes = FileManager.default.contents(atPath: path)
            else { return [] }
            return [Array(bytes)]
        })
}
