import Crypto
import CryptoExtras
import Foundation

/// How a key-encryption key is made from a password, stored beside what it
/// protects: scrypt (the default) or PBKDF2-HMAC-SHA-256 (for FIPS and
/// CommonCrypto compatibility), with a random 16-byte salt.
public enum PasswordKDF: Sendable, Equatable {
    case scrypt(logN: UInt8, r: UInt8, p: UInt8)
    case pbkdf2SHA256(rounds: UInt32)

    /// For new data: scrypt N = 2^17, r = 8, p = 1 (about half a second on one core here).
    public static let defaultScrypt = PasswordKDF.scrypt(logN: 17, r: 8, p: 1)
    /// The PBKDF2 choice: 600,000 rounds, OWASP's figure for HMAC-SHA-256.
    public static let defaultPBKDF2 = PasswordKDF.pbkdf2SHA256(rounds: 600_000)

    /// The most a reader will do, refused before any work: scrypt up to
    /// N = 2^20 (1 GiB at r = 8) with N·r·p ≤ 2^23 — eight times the
    /// default's work, about 3.5 s on one core here — and PBKDF2 up to 10^7
    /// rounds. Capping the product bounds time as well as memory.
    static let maximumLogN: UInt8 = 20
    static let maximumRP = 64
    static let maximumWork = 1 << 23
    static let maximumRounds: UInt32 = 10_000_000

    public var description: String {
        switch self {
        case let .scrypt(logN, r, p): "scrypt N=2^\(logN) r=\(r) p=\(p)"
        case let .pbkdf2SHA256(rounds): "PBKDF2-HMAC-SHA-256 \(rounds) rounds"
        }
    }

    /// True when this is weaker than what Coffer uses for new data of the same kind.
    public var isBelowCurrentDefault: Bool {
        switch self {
        case let .scrypt(logN, r, p): logN < 17 || Int(r) * Int(p) < 8
        case let .pbkdf2SHA256(rounds): rounds < 600_000
        }
    }

    func checkLimits() throws {
        switch self {
        case let .scrypt(logN, r, p):
            guard logN >= 1, r >= 1, p >= 1 else {
                throw CofferError(.malformed, "scrypt parameters must be at least 1")
            }
            guard logN <= Self.maximumLogN, Int(r) * Int(p) <= Self.maximumRP,
                (1 << Int(logN)) * Int(r) * Int(p) <= Self.maximumWork
            else {
                throw CofferError(
                    .unsupported,
                    "\(description) is above this reader's cap (N ≤ 2^\(Self.maximumLogN), N·r·p ≤ 2^23); refused before any work"
                )
            }
        case let .pbkdf2SHA256(rounds):
            guard rounds >= 1 else { throw CofferError(.malformed, "PBKDF2 needs at least one round") }
            guard rounds <= Self.maximumRounds else {
                throw CofferError(
                    .unsupported,
                    "\(description) is above this reader's cap (\(Self.maximumRounds) rounds); refused before any work")
            }
        }
    }

    /// The 32-byte key for `password` and `salt`, after checking the caps.
    public func derive(password: [UInt8], salt: [UInt8]) throws -> SymmetricKey {
        try checkLimits()
        WorkCounter.record(.kdf)
        switch self {
        case let .scrypt(logN, r, p):
            return try KDF.Scrypt.deriveKey(
                from: password, salt: salt, outputByteCount: 32, rounds: 1 << Int(logN),
                blockSize: Int(r), parallelism: Int(p), maxMemory: 1 << 31)
        case let .pbkdf2SHA256(rounds):
            return try KDF.Insecure.PBKDF2.deriveKey(
                from: password, salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: Int(rounds))
        }
    }
}
