import Foundation

extension Age {
    /// Gives an age file a new set of recipients without re-encrypting it:
    /// unwraps the file key with `identities`, writes a new header for
    /// `recipients`, and copies the payload bytes unchanged.
    ///
    /// ```swift
    /// try Age.rekey(from: &input, to: &output, identities: [mine], recipients: [alice, bob])
    /// ```
    ///
    /// What it guarantees, exactly:
    /// - The new header is written to `sink` first, then the payload is
    ///   copied through and, with `verifyPayload` (the default), each chunk
    ///   is authenticated on the way. A damaged payload makes `rekey` throw
    ///   after part of the output was written: **the caller must discard
    ///   the output when it throws** (``AtomicFile`` and ``OutputFile`` do:
    ///   abort leaves the destination as it was). With `verifyPayload:
    ///   false` nothing is checked beyond the header, and a damaged payload
    ///   gets a valid new header.
    /// - Either way, rekeying never makes a tampered payload decrypt: the
    ///   payload key depends only on the unchanged file key and nonce.
    /// - The file key does not change: anyone who already learned it (an old
    /// recipient who decrypted the file) can still read the new copy. To
    /// cut someone off, decrypt and encrypt anew instead.
    public static func rekey<Source: ByteSource, Sink: ByteSink>(
        from source: inout Source, to sink: inout Sink, identities: [any Identity],
        recipients: [any Recipient], armored: Bool = false, verifyPayload: Bool = true
    ) throws {
        try withBinaryFile(source) { reader, _ in
            let header = try Header.read(from: &reader)
            let fileKey = try unwrap(header, identities: identities)
            let newHeader = try makeHeader(fileKey: fileKey, recipients: recipients)
            if armored {
                var armor = ArmorWriter(sink)
                try copyPayload(header: newHeader, fileKey: fileKey, from: &reader, to: &armor, verify: verifyPayload)
                try armor.finish()
                sink = armor.sink
            } else {
                try copyPayload(header: newHeader, fileKey: fileKey, from: &reader, to: &sink, verify: verifyPayload)
            }
        }
    }

    private static func copyPayload<Source: ByteSource, Sink: ByteSink>(
        header: Header, fileKey: FileKey, from source: inout Source, to sink: inout Sink, verify: Bool
    ) throws {
        try sink.write(header.encoded)
        var tee = TeeSource(source: source, sink: sink)
        if verify {
            var discard = DiscardSink()
            try PayloadReader.read(fileKey: fileKey, from: &tee, to: &discard)
        } else {
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while try buffer.withUnsafeMutableBytes({ try tee.read(into: $0) }) > 0 {}
        }
        sink = tee.sink
    }
}

/// Passes everything read from `source` on to `sink` as well.
struct TeeSource<Source: ByteSource, Sink: ByteSink>: ByteSource {
    var source: Source
    var sink: Sink
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = try source.read(into: buffer)
        try sink.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        return count
    }
}

struct DiscardSink: ByteSink {
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws {}
}
