import Foundation
import Crypto

/// Encrypts a plaintext stream into an age payload (nonce and chunks).
struct PayloadWriter {
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

        let batchBytes = STREAM.batchChunks * STREAM.chunkSize
        // One byte beyond the batch tells whether the batch holds the end.
        let buffers = ChunkBuffers(
            inputSize: batchBytes + 1, outputSize: STREAM.batchChunks * STREAM.sealedChunkSize,
            chunks: STREAM.batchChunks)
        var carried = 0
        var counter: UInt64 = 0
        var total: Int64 = 0
        while true {
            let filled = carried + (try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffers.input[carried...])))
            let atEnd = filled <= batchBytes
            let plaintextBytes = atEnd ? filled : batchBytes
            // An empty file still has one (empty, final) chunk.
            let chunks = max(1, (plaintextBytes + STREAM.chunkSize - 1) / STREAM.chunkSize)
            let first = counter
            buffers.forEachChunk(chunks) { index in
                let start = index * STREAM.chunkSize
                let count = min(STREAM.chunkSize, plaintextBytes - start)
                let last = atEnd && index == chunks - 1
                do {
                    buffers.lengths[index] = count
                    try STREAM.seal(
                        UnsafeRawBufferPointer(rebasing: buffers.input[start..<(start + count)]),
                        counter: first + UInt64(index), last: last, key: key,
                        into: UnsafeMutableRawBufferPointer(rebasing: buffers.output[(index * STREAM.sealedChunkSize)...]))
                } catch {
                    buffers.lengths[index] = -1
                }
            }
            guard !buffers.lengths[..<chunks].contains(-1) else { throw CofferError(.io, "sealing a payload chunk failed") }
            let sealedBytes = plaintextBytes + chunks * STREAM.tagSize
            try sink.write(UnsafeRawBufferPointer(rebasing: buffers.output[..<sealedBytes]))
            counter += UInt64(chunks)
            total += Int64(plaintextBytes)
            progress?(total)
            if atEnd { return }
            // Keep the look-ahead byte as the start of the next batch.
            buffers.input[0] = buffers.input[batchBytes]
            carried = 1
        }
    }
}

