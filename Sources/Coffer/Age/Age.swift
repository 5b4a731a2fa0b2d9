import Foundation

/// age v1 file encryption (c2sp.org/age): encrypt a stream to one or more
/// recipients, decrypt it with any matching identity.
///
/// ```swift
/// let identity = X25519.Identity()
/// let sealed = try Age.encrypt(Data("hello".utf8), to: [identity.recipient])
/// let opened = try Age.decrypt(sealed, with: [identity])
/// ```
///
/// There are no algorithm, chunk-size or nonce parameters: the format
/// version fixes them. Decryption writes plaintext only after the chunk
/// that holds it has authenticated; on error, what was already written is
/// a prefix of the plaintext and the caller must discard it (the `coffer`
/// tool writes to a temporary file for that reason).
public enum Age {
    /// Encrypts everything `source` yields to `recipients`, writing the age
    /// file (ASCII-armored when `armored`) to `sink`. `progress` receives the
    /// plaintext byte count so far.
    public static func encrypt<Source: ByteSource, Sink: ByteSink>(
        from source: inout Source, to sink: inout Sink, recipients: [any Recipient],
        armored: Bool = false, progress: ((Int64) -> Void)? = nil
    ) throws {
        let fileKey = FileKey.random()
        let header = try makeHeader(fileKey: fileKey, recipients: recipients)
        if armored {
            var armor = ArmorWriter(sink)
            try armor.write(header.encoded)
            try PayloadWriter.write(fileKey: fileKey, from: &source, to: &armor, progress: progress)
            try armor.finish()
            sink = armor.sink
        } else {
            try sink.write(header.encoded)
            try PayloadWriter.write(fileKey: fileKey, from: &source, to: &sink, progress: progress)
        }
    }

    /// Decrypts an age file, binary or armored (detected), from `source`.
    /// Throws `CofferError`: `.noIdentityMatched` (`.wrongPassword` for a
    /// passphrase-encrypted file no passphrase opened), `.headerAuthenticationFailed`,
    /// `.malformedHeader`, `.unsupported`, `.malformedArmor`,
    /// `.malformedPayload` or `.payloadAuthenticationFailed`.
    public static func decrypt<Source: ByteSource, Sink: ByteSink>(
        from source: inout Source, to sink: inout Sink, identities: [any Identity],
        progress: ((Int64) -> Void)? = nil
    ) throws {
        let positional = source.positionalRemainder()
        let readByOffset = try withBinaryFile(source) { reader, armored in
            let header = try Header.read(from: &reader)
            let fileKey = try unwrap(header, identities: identities)
            // A binary regular file: workers read the payload by offset.
            let headerSize = Int64(header.encoded.count)
            if let positional, !armored, positional.length >= headerSize {
                try PayloadReader.read(
                    fileKey: fileKey, from: &reader, positional: positional.dropping(headerSize), to: &sink,
                    progress: progress)
                return true
            }
            try PayloadReader.read(fileKey: fileKey, from: &reader, to: &sink, progress: progress)
            return false
        }
        if let positional, readByOffset { try source.finishPositionalRead(positional) }
    }

    /// Encrypts `plaintext` in memory.
    ///
    /// ```swift
    /// let identity = X25519.Identity()
    /// let file = try Age.encrypt(Data("hello".utf8), to: [identity.recipient], armored: true)
    /// ```
    public static func encrypt(_ plaintext: some DataProtocol, to recipients: [any Recipient], armored: Bool = false)
        throws -> Data
    {
        var source = BufferSource(plaintext)
        var sink = BufferSink()
        try encrypt(from: &source, to: &sink, recipients: recipients, armored: armored)
        return Data(sink.bytes)
    }

    /// Decrypts an age file in memory; nothing is returned unless the whole
    /// file authenticated.
    ///
    /// ```swift
    /// let identity = try X25519.Identity(String(decoding: try Data(contentsOf: keyFile), as: UTF8.self))
    /// let plaintext = try Age.decrypt(try Data(contentsOf: encryptedFile), with: [identity])
    /// ```
    public static func decrypt(_ ciphertext: some DataProtocol, with identities: [any Identity]) throws -> Data {
        var source = BufferSource(ciphertext)
        var sink = BufferSink()
        try decrypt(from: &source, to: &sink, identities: identities)
        return Data(sink.bytes)
    }

    // MARK: - Shared steps

    static func makeHeader(fileKey: FileKey, recipients: [any Recipient]) throws -> Header {
        guard !recipients.isEmpty else { throw CofferError(.invalidArgument, "no recipients: give at least one") }
        var stanzas: [Stanza] = []
        for recipient in recipients { stanzas += try recipient.wrap(fileKey) }
        guard !stanzas.isEmpty else { throw CofferError(.invalidArgument, "a recipient produced no stanza") }
        if stanzas.count > 1, stanzas.contains(where: { $0.type == Scrypt.stanzaType }) {
            throw CofferError(.invalidArgument, "a passphrase cannot be combined with other recipients or passphrases")
        }
        return Header(stanzas: stanzas, fileKey: fileKey)
    }

    /// Finds the file key with the first identity that opens a stanza, and
    /// checks the header MAC with it.
    static func unwrap(_ header: Header, identities: [any Identity]) throws -> FileKey {
        // A passphrase must authenticate the file alone (c2sp.org/age, scrypt).
        if header.stanzas.count > 1, header.stanzas.contains(where: { $0.type == Scrypt.stanzaType }) {
            throw CofferError(.malformedHeader, "a scrypt stanza must be the only stanza in the header")
        }
        for identity in identities {
            if let fileKey = try identity.unwrap(header.stanzas) {
                try header.verify(fileKey: fileKey)
                return fileKey
            }
        }
        let types = Set(header.stanzas.map(\.type)).sorted().joined(separator: ", ")
        if header.stanzas.contains(where: { $0.type == Scrypt.stanzaType }) {
            throw CofferError(.wrongPassword, "the file is passphrase-encrypted and no passphrase given opened it")
        }
        throw CofferError(
            .noIdentityMatched, "no identity matched any of the file's recipients (stanza types: \(types))")
    }

    /// Calls `body` with a line reader over the binary age file, removing
    /// the armor first when the input is armored.
    static func withBinaryFile<Source: ByteSource, R>(
        _ source: Source, _ body: (inout LineReader<AgeInput<Source>>, _ armored: Bool) throws -> R
    ) throws -> R {
        var outer = LineReader(source)
        let armored = try Armor.detect(&outer)
        var reader = LineReader(armored ? AgeInput.armored(ArmorReader(outer)) : .binary(outer))
        return try body(&reader, armored)
    }
}

/// The binary age file, read directly or through the armor decoder.
enum AgeInput<Source: ByteSource>: ByteSource {
    case binary(LineReader<Source>)
    case armored(ArmorReader<Source>)

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        switch self {
        case .binary(var reader):
            defer { self = .binary(reader) }
            return try reader.read(into: buffer)
        case .armored(var reader):
            defer { self = .armored(reader) }
            return try reader.read(into: buffer)
        }
    }
}
