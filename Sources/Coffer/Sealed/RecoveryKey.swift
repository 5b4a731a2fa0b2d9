import Crypto
import Foundation

/// A 256-bit key-encryption key meant to be written down once and typed
/// back in when every other way in is lost (docs/key-slots.md, "Recovery
/// keys"): a key slot made for it opens like any KEK slot.
///
/// Its text is the key and two check bytes (the first two of SHA-256 over
/// "coffer recovery key v1" ‖ key) in RFC 4648 base32 without padding, 55
/// characters in eleven groups of five:
///
///     RNDVK-2Q7ZC-…-XXXXX
///
/// Reading ignores case, spaces and hyphens, and refuses a text whose check
/// bytes do not match (a typo), naming neither the text nor the key. Its
/// `description` never shows the key; ``text`` is the one way to see it.
public struct RecoveryKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key-encryption key.
    public let key: SymmetricKey

    static let checkLabel = Array("coffer recovery key v1".utf8)
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// A new random recovery key.
    public init() { key = SymmetricKey(size: .bits256) }

    /// The recovery key written as `text` (any case, spaces and hyphens
    /// anywhere). A text of the wrong length or alphabet is `malformed`; a
    /// typo that leaves it well formed fails its check bytes (`malformed`).
    public init(text: String) throws {
        var symbols: [UInt8] = []
        for byte in text.utf8 where byte != UInt8(ascii: "-") && byte != UInt8(ascii: " ") {
            let upper = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) ? byte - 32 : byte
            guard let value = Self.alphabet.firstIndex(of: upper) else {
                throw CofferError(
                    .malformed,
                    "a recovery key is letters A-Z and digits 2-7 in groups of five; this holds another character")
            }
            symbols.append(UInt8(value))
        }
        guard symbols.count == 55 else {
            throw CofferError(.malformed, "a recovery key has 55 letters and digits; this has \(symbols.count)")
        }
        var bytes: [UInt8] = []
        var buffer = 0
        var bits = 0
        for symbol in symbols {
            buffer = buffer << 5 | Int(symbol)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> bits))
                buffer &= (1 << bits) - 1
            }
        }
        // 55 symbols are 275 bits: 34 bytes and 3 bits that must be zero.
        guard bytes.count == 34, buffer == 0 else {
            throw CofferError(
                .malformed, "the recovery key does not decode (its last character is not one it can end with)")
        }
        let key = Array(bytes[..<32])
        guard ConstantTime.equal(Self.check(key), Array(bytes[32...])) else {
            throw CofferError(.malformed, "the recovery key has a typo: its check characters do not match")
        }
        self.key = SymmetricKey(data: key)
    }

    static func check(_ key: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: checkLabel + key).prefix(2))
    }

    /// The text to write down: eleven groups of five, hyphenated.
    public var text: String {
        let bytes = key.withUnsafeBytes { Array($0) }
        let all = bytes + Self.check(bytes)
        var symbols: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in all {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                symbols.append(Self.alphabet[(buffer >> bits) & 31])
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { symbols.append(Self.alphabet[(buffer << (5 - bits)) & 31]) }
        var text = ""
        for (index, symbol) in symbols.enumerated() {
            if index > 0 && index % 5 == 0 { text += "-" }
            text.append(Character(Unicode.Scalar(symbol)))
        }
        return text
    }

    /// The key as what unlocks a key slot.
    public var unlockSecret: UnlockSecret { .key(key) }

    public var description: String { "RecoveryKey(<redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension UnlockSecret {
    /// A recovery key as its text was written down (``RecoveryKey``).
    public static func recoveryKey(_ text: String) throws -> UnlockSecret { try RecoveryKey(text: text).unlockSecret }

    /// A password or passphrase as typed (a `SecureField`'s text): its
    /// UTF-8 bytes, not normalised.
    public static func password(_ password: String) -> UnlockSecret { .password(Array(password.utf8)) }
}
