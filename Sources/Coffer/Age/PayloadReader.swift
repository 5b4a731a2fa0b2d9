import Foundation
import Crypto

/// Decrypts an age payload stream, releasing each chunk only after it has
/// authenticated, and in order.
struct PayloadReader {
    static func read<Source: ByteSource, Sink: ByteSink>(
        fileKey: FileKey, from source: inout Source, to sink: inout Sink,
        progress: ((Int64) -> Void)? = nil
    ) throws {
        var nonce = [UInt8](repeating: 0, count: STREAM.nonceSize)
        let nonceBytes = try nonce.withUnsafeMutableBytes { try source.readFully(into: $0) }
        guard nonceBytes == STREAM.nonceSize else {
            throw CofferError(.malformedPayload, "the payload is truncated: its 16-byte nonce is incomplete")
        }
        let key = STREAM.payloadKey(fileKey: fileKey, nonce: nonce)

        let batchBytes = STREAM.batchChunks * STREAM.sealedChunkSize
        let buffers = ChunkBuffers(
            inputSize: batchBytes + 1, outputSize: STREAM.batchChunks * STREAM.chunkSize,
            chunks: STREAM.batchChunks)
        var carried = 0
        var counter: UInt64 = 0
        var total: Int64 = 0
        while true {
            let filled = carried + (try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffers.input[carried...])))
            let atEnd = filled <= batchBytes
            let sealedBytes = atEnd ? filled : batchBytes
            guard sealedBytes > 0 else {
                throw CofferError(.malformedPayload, "the payload has no chunks: the file is truncated")
            }
            let chunks = (sealedBytes + STREAM.sealedChunkSize - 1) / STREAM.sealedChunkSize
            let first = counter
            buffers.forEachChunk(chunks) { index in
                let start = index * STREAM.sealedChunkSize
                let sealed = UnsafeRawBufferPointer(rebasing: buffers.input[start..<min(start + STREAM.sealedChunkSize, sealedBytes)])
                let output = UnsafeMutableRawBufferPointer(rebasing: buffers.output[(index * STREAM.chunkSize)...])
                let last = atEnd && index == chunks - 1
                buffers.lengths[index] = STREAM.open(sealed, counter: first + UInt64(index), last: last, key: key, into: output) ?? -1
            }
            // Release, in order, every chunk up to the first that failed.
            for index in 0..<chunks {
                let length = buffers.lengths[index]
                let chunkCounter = first + UInt64(index)
                let isFinal = atEnd && index == chunks - 1
                if length < 0 {
                    throw failure(chunk: chunkCounter, isFinal: isFinal, buffers: buffers, index: index, sealedBytes: sealedBytes, key: key)
                }
                if isFinal && length == 0 && chunkCounter > 0 {
                    throw CofferError(.malformedPayload, "the final chunk is empty, which only an empty file may have")
                }
                try sink.write(UnsafeRawBufferPointer(rebasing: buffers.output[(index * STREAM.chunkSize)..<(index * STREAM.chunkSize + length)]))
                total += Int64(length)
            }
            progress?(total)
            counter += UInt64(chunks)
            if atEnd { return }
            buffers.input[0] = buffers.input[batchBytes]
            carried = 1
        }
    }

    /// Explains why chunk `chunk` did not open: truncation (a full chunk at
    /// the end that is not marked final), a final chunk with data after it,
    /// a chunk too short to hold a tag, or a failed tag.
    private static func failure(chunk: UInt64, isFinal: Bool, buffers: ChunkBuffers, index: Int,
                                sealedBytes: Int, key: SymmetricKey) -> CofferError {
        let start = index * STREAM.sealedChunkSize
        let sealed = UnsafeRawBufferPointer(rebasing: buffers.input[start..<min(start + STREAM.sealedChunkSize, sealedBytes)])
        if sealed.count < STREAM.tagSize {
            return CofferError(.malformedPayload, "chunk \(chunk) is \(sealed.count) bytes, too short to hold its tag: the file is truncated")
        }
        let scratch = UnsafeMutableRawBufferPointer(rebasing: buffers.output[(index * STREAM.chunkSize)...])
        if STREAM.open(sealed, counter: chunk, last: !isFinal, key: key, into: scratch) != nil {
            return isFinal
                ? CofferError(.malformedPayload, "the payload ends after chunk \(chunk), which is not marked final: the file is truncated")
                : CofferError(.malformedPayload, "chunk \(chunk) is marked final but data follows it")
        }
        return CofferError(.payloadAuthenticationFailed, "payload chunk \(chunk) failed to authenticate: the file was modified or corrupted")
    }
}
