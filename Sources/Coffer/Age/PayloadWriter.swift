import Crypto
import Foundation

/// Encrypts a plaintext stream into an age payload (nonce and chunks).
enum PayloadWriter {
    /// Reads `source` to its end and writes the sealed payload to `sink`.
    /// Reports the plaintext bytes consumed so far through `progress`.
    static func write<Source: ByteSource, Sink: ByteSink>(
        fileKey: FileKey, from source: inout Source, to sink: inout Sink,
        progress: ((Int64) -> Void)? = nil
    ) throws {
        var nonce = [UInt8](repeating: 0, count: STREAM.nonceSize)
        nonce.withUnsafeMutableBytes { randomBytes($0) }
        try sink.write(nonce)
        let key = STREAM.payloadKey(fileKey: fileKey, nonce: nonce)
        var total: Int64 = 0
        // A regular file is read by the workers themselves, in parallel;
        // each seals its chunk where it read it.
        let positional = source.positionalRemainder()
        let cipher = try ChunkCipher.current(payloadBytes: positional?.length)
        try ChunkPipeline.run(
            inputUnit: STREAM.chunkSize, outputUnit: STREAM.sealedChunkSize, from: &source, positional: positional,
            inPlace: true
        ) { batch, index in
            let sealed = STREAM.seal(
                batch.chunk(index), into: batch.outputSlot(index), counter: batch.firstCounter + UInt64(index),
                last: batch.atEnd && index == batch.chunks - 1, key: key, cipher: cipher)
            return sealed ? .done : .failed
        } emit: { batch in
            if let failed = (0..<batch.chunks).first(where: { batch.status[$0] != .done }) {
                throw CofferError(.io, "sealing payload chunk \(batch.firstCounter + UInt64(failed)) failed")
            }
            // Every chunk but a batch's last is full, so the sealed chunks
            // lie end to end in the output buffer: one write per batch.
            let bytes = batch.inputBytes + batch.chunks * STREAM.tagSize
            try sink.write(UnsafeRawBufferPointer(rebasing: batch.output[..<bytes]))
            total += Int64(batch.inputBytes)
            progress?(total)
        }
        if let positional { try source.finishPositionalRead(positional) }
    }
}
