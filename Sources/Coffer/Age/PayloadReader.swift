import Crypto
import Foundation

/// Decrypts an age payload stream. A chunk is released only after it has
/// authenticated, and chunks are released in order; an error is raised at
/// the first chunk that fails, after the ones before it.
struct PayloadReader {
    static func read<Source: ByteSource, Sink: ByteSink>(
        fileKey: FileKey, from source: inout Source, to sink: inout Sink,
        progress: ((Int64) -> Void)? = nil
    ) throws {
        var nonce = [UInt8](repeating: 0, count: STREAM.nonceSize)
        let nonceBytes = try nonce.withUnsafeMutableBytes { try source.readFully(into: $0) }
        guard nonceBytes == STREAM.nonceSize else {
            // The test kit counts the nonce as part of the header.
            throw CofferError(.malformedHeader, "the file ends before its 16-byte payload nonce")
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
                let chunk = first + UInt64(index)
                // Only a short chunk is known to be the last; a full one may
                // be either, so it is tried as a middle chunk first.
                let mustBeFinal = sealed.count < STREAM.sealedChunkSize
                var length = mustBeFinal ? nil : STREAM.open(sealed, counter: chunk, last: false, key: key, into: output)
                buffers.finals[index] = length == nil
                if length == nil { length = STREAM.open(sealed, counter: chunk, last: true, key: key, into: output) }
                buffers.lengths[index] = length ?? -1
            }
            for index in 0..<chunks {
                let length = buffers.lengths[index]
                let chunk = first + UInt64(index)
                let endOfInput = atEnd && index == chunks - 1
                guard length >= 0 else {
                    let size = min(STREAM.sealedChunkSize, sealedBytes - index * STREAM.sealedChunkSize)
                    if size < STREAM.tagSize {
                        throw CofferError(.malformedPayload, "payload chunk \(chunk) is \(size) bytes, too short to hold its tag: the file is truncated")
                    }
                    throw CofferError(.payloadAuthenticationFailed, "payload chunk \(chunk) failed to authenticate: the file was modified or corrupted")
                }
                let isFinal = buffers.finals[index]
                if isFinal && length == 0 && chunk > 0 {
                    throw CofferError(.malformedPayload, "the final chunk is empty, which only an empty file may have")
                }
                try sink.write(UnsafeRawBufferPointer(rebasing: buffers.output[(index * STREAM.chunkSize)..<(index * STREAM.chunkSize + length)]))
                total += Int64(length)
                if isFinal && !endOfInput {
                    throw CofferError(.malformedPayload, "data follows the final chunk (\(chunk)): the file was extended")
                }
                if !isFinal && endOfInput {
                    throw CofferError(.malformedPayload, "the payload ends after chunk \(chunk), which is not marked final: the file is truncated")
                }
            }
            progress?(total)
            counter += UInt64(chunks)
            if atEnd { return }
            buffers.input[0] = buffers.input[batchBytes]
            carried = 1
        }
    }
}
