import Crypto
import CryptoExtras
import Foundation

/// Sealed value v1: Coffer's compact format for small secrets (docs/sealed-values.md).
///
///     version 0x01 (1) ‖ key id (4, big-endian) ‖ nonce (12) ‖ ciphertext (n) ‖ tag (16)
///
/// AES-256-GCM-SIV (RFC 8452) with a random nonce; associated data =
/// version ‖ key id ‖ context. The context (where the value belongs, e.g.
/// `notes/42/description`) is bound but not stored, so a value moved to
/// another place does not open there. Overhead: 33 bytes. The text form is
/// `cs1.` followed by the binary form in unpadded base64url (RFC 4648 §5).
public enum SealedValue {
    public static let version: UInt8 = 1
    public static let textPrefix = "cs1."
    static let nonceSize = 12
    static let tagSize = 16
    /// Bytes a sealed value adds to its plaintext in binary form.
    public static let overhead = 1 + 4 + nonceSize + tagSize

    static func header(keyID: UInt32) -> [UInt8] {
        [version, UInt8(keyID >> 24), UInt8(keyID >> 16 & 0xff), UInt8(keyID >> 8 & 0xff), UInt8(keyID & 0xff)]
    }

    /// Seals under one data key with a fresh random nonce.
    static func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: UInt32, key: SymmetricKey, context: UnsafeRawBufferPointer
    ) throws -> Data {
        try seal(plaintext, keyID: keyID, key: key, context: context, nonce: NonceSource.shared.sivNonce())
    }

    /// With a given nonce: only the format vectors' check uses it.
    static func seal(
        _ plaintext: some DataProtocol, keyID: UInt32, key: SymmetricKey, context: some DataProtocol,
        nonce: AES.GCM._SIV.Nonce
    ) throws -> Data {
        try withContiguousBytes(of: plaintext, and: context) {
            try seal($0, keyID: keyID, key: key, context: $1, nonce: nonce)
        }
    }

    /// The non-generic core: callers' byte types are made contiguous once,
    /// outside (no unspecialised generic code on the hot path).
    static func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: UInt32, key: SymmetricKey, context: UnsafeRawBufferPointer,
        nonce: AES.GCM._SIV.Nonce
    ) throws -> Data {
        let box = try withAssociatedData(keyID: keyID, context: context) { aad in
            try AES.GCM._SIV.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
        }
        let combined = box.combined
        var sealed = Data(capacity: 5 + combined.count)
        sealed.append(contentsOf: header(keyID: keyID))
        sealed.append(combined)
        return sealed
    }

    /// Calls `body` with version ‖ key id ‖ context, built on the stack.
    static func withAssociatedData<R>(
        keyID: UInt32, context: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: 5 + context.count, alignment: 1) { buffer in
            buffer[0] = version
            buffer.storeBytes(of: keyID.bigEndian, toByteOffset: 1, as: UInt32.self)
            if let base = context.baseAddress {
                (buffer.baseAddress! + 5).copyMemory(from: base, byteCount: context.count)
            }
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// The AEAD step alone, AES-256-GCM-SIV: nonce ‖ ciphertext ‖ tag.
    /// RFC 8452's vectors run through this and `aeadOpen`.
    static func aeadSeal(
        _ plaintext: some DataProtocol, key: SymmetricKey, nonce: AES.GCM._SIV.Nonce, associatedData: some DataProtocol
    ) throws -> Data {
        try AES.GCM._SIV.seal(plaintext, using: key, nonce: nonce, authenticating: associatedData).combined
    }

    static func aeadOpen(_ combined: some DataProtocol, key: SymmetricKey, associatedData: some DataProtocol) throws
        -> Data
    {
        try AES.GCM._SIV.open(AES.GCM._SIV.SealedBox(combined: combined), using: key, authenticating: associatedData)
    }

    /// The key id a sealed value names, after checking its version and length.
    public static func keyID(of sealed: some DataProtocol) throws -> UInt32 {
        try withContiguousBytes(of: sealed) { try keyID(of: $0) }
    }

    static func keyID(of sealed: UnsafeRawBufferPointer) throws -> UInt32 {
        guard sealed.count >= overhead else {
            throw CofferError(.malformed, "a sealed value is at least \(overhead) bytes, not \(sealed.count)")
        }
        var bytes = sealed.makeIterator()
        let first = bytes.next()!
        guard first == version else {
            throw CofferError(.unsupported, "sealed value version \(first) is not supported (only \(version))")
        }
        var id: UInt32 = 0
        for _ in 0..<4 { id = id << 8 | UInt32(bytes.next()!) }
        return id
    }

    static func open(
        _ sealed: UnsafeRawBufferPointer, keyID: UInt32, key: SymmetricKey, context: UnsafeRawBufferPointer
    ) throws -> Data {
        do {
            let box = try AES.GCM._SIV.SealedBox(combined: UnsafeRawBufferPointer(rebasing: sealed[5...]))
            return try withAssociatedData(keyID: keyID, context: context) {
                try AES.GCM._SIV.open(box, using: key, authenticating: $0)
            }
        } catch {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the sealed value does not open: wrong context, wrong key ring, or damaged value")
        }
    }

    /// The text form: `cs1.` + unpadded base64url.
    public static func text(_ sealed: some DataProtocol) -> String {
        textPrefix + Base64URL.encode(Array(sealed))
    }

    /// Binary from either form: text is recognised by its prefix, and may
    /// end with one line ending (`\n` or `\r\n`, as a file or `echo`
    /// gives it); any other byte around it is refused.
    public static func binary(_ input: some DataProtocol) throws -> Data {
        var bytes = Data(input)
        guard bytes.starts(with: Array(textPrefix.utf8)) else { return bytes }
        if bytes.last == 0x0A {
            bytes.removeLast()
            if bytes.last == 0x0D { bytes.removeLast() }
        }
        let body = String(decoding: bytes.dropFirst(textPrefix.utf8.count), as: UTF8.self)
        guard !body.isEmpty, body.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw CofferError(.malformed, "a text sealed value is \(textPrefix) followed by unpadded base64url")
        }
        guard body.utf8.count % 4 != 1 else {
            throw CofferError(.malformed, "the sealed value's base64url has an impossible length")
        }
        guard let decoded = Base64URL.decode(body) else {
            throw CofferError(.malformed, "the sealed value's base64url is not canonical")
        }
        return Data(decoded)
    }
}
