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
        // A regular file is read by the workers themselves, in parallel.
        let fileSource = source as? FileDescriptorSource
        let file = fileSource?.remainingFileRange
        try ChunkPipeline.run(unit: STREAM.chunkSize, from: &source, file: file) { batch, index in
            batch.results[index] = try? STREAM.seal(
                batch.chunk(index, unit: STREAM.chunkSize),
                counter: batch.firstCounter + UInt64(index),
                last: batch.atEnd && index == batch.chunks - 1, key: key)
        } emit: { batch in
            for index in 0..<batch.chunks {
                guard let sealed = batch.results[index] else {
                    throw CofferError(.io, "sealing payload chunk \(batch.firstCounter + UInt64(index)) failed")
                }
                // Skip swift-crypto's nonce prefix: age's nonce is implicit.
                try sealed.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[12...])) }
                batch.results[index] = nil
            }
            total += Int64(batch.inputBytes)
            progress?(total)
        }
        if let file { try fileSource?.finishPositionalRead(file) }
    }
}
