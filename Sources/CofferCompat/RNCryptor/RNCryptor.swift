import Coffer
import Crypto
import CryptoExtras
import Foundation

/// RNCryptor data format v3 (github.com/RNCryptor/RNCryptor-Spec):
///
///     version 03 ‖ options (01 password, 00 keys)
///     ‖ [encryption salt 8 ‖ HMAC salt 8]   (password messages only)
///     ‖ IV 16 ‖ AES-256-CBC/PKCS#7 ciphertext ‖ HMAC-SHA-256 32
///
/// Password keys are PBKDF2-HMAC-SHA1, 10,000 rounds, 32 bytes, one per
/// salt. The HMAC covers everything before it and is checked, in constant
/// time, before a byte is decrypted. Streaming decryption spools the
/// ciphertext to an unlinked temporary file while computing the HMAC and
/// decrypts only after it verified, so no plaintext is ever handed out
/// unauthenticated.
///
/// ```swift
/// let message = try RNCryptor.encrypt(Data("hi".utf8), credentials: .password(Array("secret".utf8)))
/// let hi = try RNCryptor.decrypt(message, credentials: .password(Array("secret".utf8)))
/// // A wrong password or a changed byte throws before anything is decrypted.
/// ```
public enum RNCryptor {
    public enum Credentials: Sendable {
        case password([UInt8])
        /// The encryption key, then the HMAC key, 32 bytes each.
        case keys(encryption: SymmetricKey, hmac: SymmetricKey)

        /// 64 bytes from a key file: the encryption key, then the HMAC key.
        public static func keyFile(_ bytes: some Collection<UInt8>) throws -> Credentials {
            let bytes = Array(bytes)
            guard bytes.count == 64 else {
                throw CofferError(
                    .invalidArgument,
                    "an RNCryptor key file holds 64 bytes (encryption key, then HMAC key), not \(bytes.count)")
            }
            return .keys(encryption: SymmetricKey(data: bytes.prefix(32)), hmac: SymmetricKey(data: bytes.suffix(32)))
        }
    }

    static let version: UInt8 = 3
    static let rounds = 10_000
    static let hmacSize = 32
    static let blockSize = 16

    /// PBKDF2-HMAC-SHA1, 10,000 rounds, 32 bytes: RNCryptor v3's key derivation.
    public static func key(password: [UInt8], salt: [UInt8]) throws -> SymmetricKey {
        try KDF.Insecure.PBKDF2.deriveKey(
            from: password, salt: salt, using: .insecureSHA1, outputByteCount: 32, unsafeUncheckedRounds: rounds)
    }

    struct Header {
        var bytes: [UInt8]
        var encryptionKey: SymmetricKey
        var hmacKey: SymmetricKey
        var iv: [UInt8]
    }

    static func makeHeader(_ credentials: Credentials, encryptionSalt: [UInt8], hmacSalt: [UInt8], iv: [UInt8]) throws
        -> Header
    {
        switch credentials {
        case .password(let password):
            return Header(
                bytes: [version, 1] + encryptionSalt + hmacSalt + iv,
                encryptionKey: try key(password: password, salt: encryptionSalt),
                hmacKey: try key(password: password, salt: hmacSalt), iv: iv)
        case let .keys(encryption, hmac):
            guard encryption.bitCount == 256, hmac.bitCount == 256 else {
                throw CofferError(.invalidArgument, "RNCryptor keys are 32 bytes each")
            }
            return Header(bytes: [version, 0] + iv, encryptionKey: encryption, hmacKey: hmac, iv: iv)
        }
    }

    static func random(_ count: Int) -> [UInt8] {
        SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }

    /// Reads the header from the first bytes of a message.
    static func readHeader(_ prefix: [UInt8], credentials: Credentials) throws -> Header {
        guard prefix.count >= 2 else { throw CofferError(.malformed, "not an RNCryptor message: too short") }
        guard prefix[0] == version else {
            throw CofferError(.unsupported, "RNCryptor format version \(prefix[0]) is not supported (only version 3)")
        }
        switch (prefix[1], credentials) {
        case (1, .password):
            guard prefix.count >= 34 else { throw CofferError(.malformed, "the RNCryptor message is truncated") }
            return try makeHeader(
                credentials, encryptionSalt: Array(prefix[2..<10]), hmacSalt: Array(prefix[10..<18]),
                iv: Array(prefix[18..<34]))
        case (0, .keys):
            guard prefix.count >= 18 else { throw CofferError(.malformed, "the RNCryptor message is truncated") }
            return try makeHeader(credentials, encryptionSalt: [], hmacSalt: [], iv: Array(prefix[2..<18]))
        case (1, .keys):
            throw CofferError(.invalidArgument, "this RNCryptor message is password-based: give the password, not keys")
        case (0, .password):
            throw CofferError(
                .invalidArgument, "this RNCryptor message is key-based: give the 64-byte key file, not a password")
        default:
            throw CofferError(.malformed, "RNCryptor options byte \(prefix[1]) is not defined (0 keys, 1 password)")
        }
    }

    static func headerSize(options: UInt8) -> Int { options == 1 ? 34 : 18 }

    // MARK: one shot

    public static func encrypt(_ plaintext: some DataProtocol, credentials: Credentials) throws -> Data {
        try encrypt(plaintext, credentials: credentials, encryptionSalt: random(8), hmacSalt: random(8), iv: random(16))
    }

    /// With given salts and IV: only for reproducing the published vectors.
    static func encrypt(
        _ plaintext: some DataProtocol, credentials: Credentials, encryptionSalt: [UInt8], hmacSalt: [UInt8],
        iv: [UInt8]
    ) throws -> Data {
        let header = try makeHeader(credentials, encryptionSalt: encryptionSalt, hmacSalt: hmacSalt, iv: iv)
        var source = BufferSource(Array(plaintext))
        var sink = BufferSink()
        try encrypt(from: &source, to: &sink, header: header)
        return Data(sink.bytes)
    }

    /// A whole RNCryptor v3 message opened: its HMAC checked (in constant time) before a byte is
    /// decrypted; a wrong password or key is `wrongPassword`, a damaged message `payloadAuthenticationFailed`.
    ///
    /// ```swift
    /// let plaintext = try RNCryptor.decrypt(stored, credentials: .password(Array(password.utf8)))
    /// ```
    public static func decrypt(_ message: some DataProtocol, credentials: Credentials) throws -> Data {
        var source = BufferSource(Array(message))
        var sink = BufferSink()
        try decrypt(from: &source, to: &sink, credentials: credentials)
        return Data(sink.bytes)
    }

    // MARK: streaming

    public static func encrypt<Source: ByteSource, Sink: ByteSink>(
        from source: inout Source, to sink: inout Sink, credentials: Credentials
    ) throws {
        try encrypt(
            from: &source, to: &sink,
            header: makeHeader(credentials, encryptionSalt: random(8), hmacSalt: random(8), iv: random(16)))
    }

    static func encrypt<Source: ByteSource, Sink: ByteSink>(
        from source: inout Source, to sink: inout Sink, header: Header
    ) throws {
        var hmac = HMAC<SHA256>(key: header.hmacKey)
        hmac.update(data: header.bytes)
        try sink.write(header.bytes)
        var iv = try AES._CBC.IV(ivBytes: header.iv)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var pending: [UInt8] = []
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.readFully(into: $0) }
            pending += buffer.prefix(count)
            let last = count < buffer.count  // readFully stops short only at the end
            // Whole blocks now; the final partial block (or a full block of
            // padding) at the end.
            let ready = pending.count - pending.count % blockSize
            if ready > 0 {
                let ciphertext = try AES._CBC.encrypt(
                    pending.prefix(ready), using: header.encryptionKey, iv: iv, noPadding: true)
                iv = try AES._CBC.IV(ivBytes: ciphertext.suffix(blockSize))
                hmac.update(data: ciphertext)
                try sink.write(Array(ciphertext))
                pending.removeFirst(ready)
            }
            if last {
                let padCount = blockSize - pending.count
                let final = try AES._CBC.encrypt(
                    pending + [UInt8](repeating: UInt8(padCount), count: padCount),
                    using: header.encryptionKey, iv: iv, noPadding: true)
                hmac.update(data: final)
                try sink.write(Array(final))
                try sink.write(Array(hmac.finalize()))
                return
            }
        }
    }

    /// Verifies the whole message's HMAC first (spooling the ciphertext to
    /// an unlinked temporary file in `spoolDirectory`), then decrypts.
    public static func decrypt<Source: ByteSource, Sink: ByteSink>(
        from source: inout Source, to sink: inout Sink, credentials: Credentials,
        spoolDirectory: String = NSTemporaryDirectory()
    ) throws {
        var first = [UInt8](repeating: 0, count: 34)
        let firstCount = try first.withUnsafeMutableBytes { try source.readFully(into: $0) }
        first = Array(first.prefix(firstCount))
        let header = try readHeader(first, credentials: credentials)
        let headerSize = header.bytes.count
        let spool = try SpoolFile(directory: spoolDirectory)
        var hmac = HMAC<SHA256>(key: header.hmacKey)
        hmac.update(data: header.bytes)
        // Everything after the header; the last 32 bytes seen are the HMAC,
        // so they are held back from the running HMAC and the spool.
        var tail = Array(first.dropFirst(headerSize))
        var ciphertextCount = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            tail += buffer.prefix(count)
            if tail.count > hmacSize {
                let body = tail.prefix(tail.count - hmacSize)
                hmac.update(data: body)
                try spool.write(Array(body))
                ciphertextCount += body.count
                tail.removeFirst(body.count)
            }
        }
        guard tail.count == hmacSize, ciphertextCount > 0, ciphertextCount % blockSize == 0 else {
            throw CofferError(
                .malformed, "the RNCryptor message is truncated or its ciphertext is not whole AES blocks")
        }
        // swift-crypto compares a MAC with bytes in constant time.
        guard hmac.finalize() == Data(tail) else {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the RNCryptor HMAC does not match: wrong password or key, or damaged data; nothing was decrypted")
        }
        // Authenticated: now decrypt from the spool.
        try spool.rewind()
        var iv = try AES._CBC.IV(ivBytes: header.iv)
        var remaining = ciphertextCount
        var held: [UInt8] = []  // the last block, whose padding comes off at the end
        while remaining > 0 {
            let want = min(buffer.count, remaining)
            let count = try buffer.withUnsafeMutableBytes {
                try spool.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want]))
            }
            guard count == want else { throw CofferError(.io, "the RNCryptor spool file ended early") }
            remaining -= count
            let chunk = Array(buffer.prefix(count))
            var plaintext = Array(try AES._CBC.decrypt(chunk, using: header.encryptionKey, iv: iv, noPadding: true))
            iv = try AES._CBC.IV(ivBytes: chunk.suffix(blockSize))
            plaintext = held + plaintext
            held = Array(plaintext.suffix(blockSize))
            try sink.write(Array(plaintext.dropLast(blockSize)))
        }
        guard let padCount = held.last, (1...UInt8(blockSize)).contains(padCount),
            held.suffix(Int(padCount)).allSatisfy({ $0 == padCount })
        else {
            throw CofferError(
                .malformed,
                "the RNCryptor plaintext has invalid PKCS#7 padding (the HMAC matched: the sender's encryption is broken)"
            )
        }
        try sink.write(Array(held.dropLast(Int(padCount))))
    }
}

/// An unlinked temporary file: its name disappears at once, so nothing is
/// left behind whatever happens to the process.
final class SpoolFile {
    private let descriptor: Int32

    init(directory: String) throws {
        var template =
            Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast())
            + Array(".coffer-spool-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw CofferError(
                .io, "cannot create a temporary file in \(directory): \(String(cString: strerror(errno)))")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    func write(_ bytes: [UInt8]) throws {
        var sink = FileDescriptorSink(fileDescriptor: descriptor)
        try sink.write(bytes)
    }

    func rewind() throws {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw CofferError(.io, "cannot rewind the temporary file") }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var source = FileDescriptorSource(fileDescriptor: descriptor)
        return try source.readFully(into: buffer)
    }
}
