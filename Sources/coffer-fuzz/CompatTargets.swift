import Coffer
import CofferCompat
import Crypto
import Foundation

/// Targets for what iOS apps already wrote: RNCryptor messages, SecKey
/// ciphertexts and key files, the CommonCrypto recipe and CryptoKit boxes,
/// AeroGear's property lists.
enum CompatTargets {
    static let all: [FuzzTarget] = [rncryptor, secKey, recipe, propertyList]

    static func isCoffer(_ error: any Error) -> Bool { error is CofferError }

    // Kept as plain values: inside multi-payload enums, Swift tags the
    // pointers with spare bits, and LeakSanitizer no longer sees them.
    static let encryptionKey = SymmetricKey(size: .bits256)
    static let hmacKey = SymmetricKey(size: .bits256)

    /// Key-based RNCryptor, so that no input costs a PBKDF2 run (a password
    /// message's header is still read before its key is made).
    static let rncryptor = FuzzTarget(
        name: "rncryptor", summary: "RNCryptor v3 messages (key and password headers)",
        run: { bytes in
            FuzzTarget.expect("RNCryptor.decrypt", isCoffer) {
                _ = try RNCryptor.decrypt(bytes, credentials: .keys(encryption: encryptionKey, hmac: hmacKey))
            }
        },
        seeds: {
            [Data(), Data("a message".utf8)].compactMap {
                (try? RNCryptor.encrypt($0, credentials: .keys(encryption: encryptionKey, hmac: hmacKey))).map {
                    Array($0)
                }
            }
        })

    static let p256Key = P256.Signing.PrivateKey()

    static let secKey = FuzzTarget(
        name: "seckey", summary: "SecKey ECIES ciphertexts and Apple key files (external form, DER, PEM)",
        run: { bytes in
            for algorithm: AppleAlgorithm in [
                .ecies(cofactor: true, variableIV: true, hash: .sha256),
                .ecies(cofactor: false, variableIV: false, hash: .sha512),
            ] {
                FuzzTarget.expect("AppleSecKey.decrypt", isCoffer) {
                    _ = try AppleSecKey.decrypt(bytes, with: .ecPrivate(.p256(p256Key)), algorithm: algorithm)
                }
            }
            FuzzTarget.expect("AppleKey(fileBytes:)", isCoffer) { _ = try AppleKey(fileBytes: bytes) }
        },
        seeds: {
            let algorithm = AppleAlgorithm.ecies(cofactor: true, variableIV: true, hash: .sha256)
            let sealed = try? AppleSecKey.encrypt(
                Data("a value".utf8), to: .ecPublic(.p256(p256Key.publicKey)), algorithm: algorithm)
            return [sealed.map { Array($0) }, Array(p256Key.publicKey.x963Representation)].compactMap { $0 }
        })

    static let boxKey = [UInt8](repeating: 1, count: 32)

    static let recipe = FuzzTarget(
        name: "recipe", summary: "the CommonCrypto recipe's envelope and CryptoKit sealed boxes",
        run: { bytes in
            FuzzTarget.expect("LegacyRecipe.envelope", isCoffer) { _ = try LegacyRecipe.envelope(bytes) }
            for cipher in CryptoKitBox.Cipher.allCases {
                FuzzTarget.expect("CryptoKitBox.open", isCoffer) {
                    _ = try CryptoKitBox.open(bytes, key: boxKey, cipher: cipher)
                }
            }
        },
        seeds: {
            CryptoKitBox.Cipher.allCases.compactMap { cipher in
                (try? CryptoKitBox.seal(Data("a note".utf8), key: boxKey, cipher: cipher)).map { Array($0) }
            }
        })

    static let propertyList = FuzzTarget(
        name: "plist", summary: "AeroGear stores and defaults: binary and XML property lists",
        run: { bytes in
            FuzzTarget.expect("AeroGear.PropertyListStore", isCoffer) {
                _ = try AeroGear.PropertyListStore(propertyList: bytes)
            }
            FuzzTarget.expect("AeroGear.Parameters", isCoffer) {
                _ = try AeroGear.Parameters(defaults: bytes, prefix: "")
            }
        },
        seeds: {
            let store: [Any] = [["name": "a", "secret": Data(repeating: 9, count: 40)]]
            let defaults: [String: Any] = ["salt": Data(repeating: 1, count: 16), "iv": Data(repeating: 2, count: 16)]
            return [store as Any, defaults as Any].flatMap { root in
                [PropertyListSerialization.PropertyListFormat.binary, .xml].compactMap { format in
                    (try? PropertyListSerialization.data(fromPropertyList: root, format: format, options: 0)).map {
                        Array($0)
                    }
                }
            }
        })
}
