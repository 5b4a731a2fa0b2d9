import Coffer
import CofferCompat
import CofferKeychain
import Crypto
import Foundation

/// A fuzz target for every parser the decryptor runs on untrusted input:
/// armor, header, stanzas, the X25519 and scrypt stanza rules, the STREAM
/// payload, and `inspect`; key files; the compatibility readers; sealed
/// values, key ring files and file keychains. Each input must end in
/// success or the module's error (`CofferError`, `KeychainError`); a crash,
/// a trap or a hang is a bug.
///
/// With libFuzzer (see fuzz/run.sh), whose driver this calls:
///     swift build -c release --product coffer-fuzz --scratch-path .build-fuzz \
///         -Xswiftc -sanitize=fuzzer,address -Xswiftc -DCOFFER_LIBFUZZER -Xswiftc -use-ld=lld
/// Without it, `coffer-fuzz FILE…` replays inputs (a corpus, a crash).
enum FuzzTarget {
    // The identity of the CCTV vectors, so seeds from the test kit get past
    // the header; scrypt capped low so that a seed cannot stall a run.
    static let identities: [any Identity] = [
        try! X25519.Identity("AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0"),
        Scrypt.Identity(passphrase: Array("password".utf8), maximumWorkFactor: 12),
    ]

    // Kept as plain values: inside multi-payload enums, Swift tags the
    // pointers with spare bits, and LeakSanitizer no longer sees them.
    static let rncryptorEncryptionKey = SymmetricKey(size: .bits256)
    static let rncryptorHMACKey = SymmetricKey(size: .bits256)
    static let appleP256Key = P256.Signing.PrivateKey()
    static let sealedRing = KeyRing()
    /// A private folder for keychain files (FileKeychain reads files, and
    /// refuses folders open to others).
    static let keychainFolder: String = {
        let folder = NSTemporaryDirectory() + "coffer-fuzz-keychain-\(getpid())"
        try? FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder
    }()
    static let keychainKey = SymmetricKey(data: [UInt8](repeating: 7, count: 32))

    static func run(_ bytes: [UInt8]) {
        var source = BufferSource(bytes)
        var sink = BufferSink()
        do { try Age.decrypt(from: &source, to: &sink, identities: identities) } catch is CofferError {} catch {
            fatalError("decrypt threw a non-Coffer error: \(error)")
        }
        var again = BufferSource(bytes)
        do { _ = try Age.inspect(&again) } catch is CofferError {} catch {
            fatalError("inspect threw a non-Coffer error: \(error)")
        }
        if let text = String(bytes: bytes, encoding: .utf8) {
            _ = try? AgeKeys.identities(fileContents: text)
            _ = try? AgeKeys.recipients(fileContents: text)
            _ = try? OpenSSH.parsePublicKeyLine(text)
        }
        // Key files in every format, and the OpenSSH private key body alone.
        let keyParsers: [(String, () throws -> Void)] = [
            ("KeyFiles.privateKey", { _ = try KeyFiles.privateKey(bytes) }),
            ("KeyFiles.publicKey", { _ = try KeyFiles.publicKey(bytes) }),
            ("OpenSSH.privateKey", { _ = try OpenSSH.privateKey(bytes: Array("openssh-key-v1\0".utf8) + bytes) }),
            ("OpenSSH.publicKey", { _ = try OpenSSH.publicKey(wire: bytes) }),
        ]
        // The compatibility formats' readers (key-based RNCryptor, so that no
        // input costs a PBKDF2 run).
        let compatParsers: [(String, () throws -> Void)] = [
            (
                "RNCryptor.decrypt",
                {
                    _ = try RNCryptor.decrypt(
                        bytes, credentials: .keys(encryption: rncryptorEncryptionKey, hmac: rncryptorHMACKey))
                }
            ),
            (
                "AppleSecKey.decrypt",
                {
                    _ = try AppleSecKey.decrypt(
                        bytes, with: .ecPrivate(.p256(appleP256Key)),
                        algorithm: .ecies(cofactor: true, variableIV: true, hash: .sha256))
                }
            ),
            ("LegacyRecipe.envelope", { _ = try LegacyRecipe.envelope(bytes) }),
            (
                "CryptoKitBox.open",
                { _ = try CryptoKitBox.open(bytes, key: [UInt8](repeating: 1, count: 32), cipher: .chachapoly) }
            ),
            ("AppleKey", { _ = try AppleKey(fileBytes: bytes) }),
            ("SealedValue", { _ = try sealedRing.open(try SealedValue.binary(bytes), context: [1]) }),
            ("KeyRingFile", { _ = try KeyRingFile(contents: bytes, secret: .key(rncryptorHMACKey)) }),
        ]
        for (name, parse) in keyParsers + compatParsers {
            do { try parse() } catch is CofferError {} catch {
                fatalError("\(name) threw a non-Coffer error: \(error)")
            }
        }
        // A file keychain's header and body, read as FileKeychain reads them.
        let path = keychainFolder + "/fuzz.keychain"
        if FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) {
            do {
                _ = try FileKeychain.open(path: path, secret: .key(keychainKey)).copyMatching(.password())
            } catch is KeychainError {} catch {
                fatalError("FileKeychain threw a non-keychain error: \(error)")
            }
        }
    }
}

#if COFFER_LIBFUZZER
/// libFuzzer's driver, for programs that keep their own `main` (SwiftPM
/// names an executable's entry point itself, so libFuzzer's `main` is not
/// linked in).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@main
struct Fuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(
            runFuzzerDriver(&argc, &argv) { data, size in
                FuzzTarget.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
                return 0
            })
    }
}
#else
@main
struct Replay {
    static func main() throws {
        let paths = CommandLine.arguments.dropFirst()
        for path in paths {
            FuzzTarget.run(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        }
        print("replayed \(paths.count) inputs without a crash")
    }
}
#endif
