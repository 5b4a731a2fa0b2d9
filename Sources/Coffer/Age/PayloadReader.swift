import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Decrypts an age payload stream. A chunk is released only after it has
/// authenticated, and chunks are released in order; an error is raised at
/// the first chunk that fails, after the ones before it.
enum PayloadReader {
    /// - Parameter file: when set, the payload (nonce first) is this range
    ///   of a regular file, read by the workers with `pread`, and `source`
    ///   is not read.
    static func read<Source: ByteSource, Sink: ByteSink>(
        fileKey: FileKey, from source: inout Source, file: FileRange? = nil, to sink: inout Sink,
        progress: ((Int64) -> Void)? = nil
    ) throws {
        var nonce = [UInt8](repeating: 0, count: STREAM.nonceSize)
        let nonceBytes = try nonce.withUnsafeMutableBytes { buffer in
            guard let file else { return try source.readFully(into: buffer) }
            return pread(file.descriptor, buffer.baseAddress, min(buffer.count, Int(max(0, file.length))), off_t(file.start))
        }
        guard nonceBytes == STREAM.nonceSize else {
            // The test kit counts the nonce as part of the header.
            throw CofferError(.malformedHeader, "the file ends before its 16-byte payload nonce")
        }
        let key = STREAM.payloadKey(fileKey: fileKey, nonce: nonce)
        var total: Int64 = 0
        let chunks = file.map { FileRange(descriptor: $0.descriptor, start: $0.start + Int64(STREAM.nonceSize), length: $0.length - Int64(STREAM.nonceSize)) }
        try ChunkPipeline.run(unit: STREAM.sealedChunkSize, from: &source, file: chunks) { batch, index in
            let sealed = batch.chunk(index, unit: STREAM.sealedChunkSize)
            let chunk = batch.firstCounter + UInt64(index)
            // Only a short chunk is known to be the last; a full one may be
            // either, so it is tried as a middle chunk first.
            var opened = sealed.count < STREAM.sealedChunkSize ? nil : STREAM.open(sealed, counter: chunk, last: false, key: key)
            batch.finals[index] = opened == nil
            if opened == nil { opened = STREAM.open(sealed, counter: chunk, last: true, key: key) }
            batch.results[index] = opened
        } emit: { batch in
            guard batch.inputBytes > 0 else {
                throw CofferError(.malformedPayload, "the payload has no chunks: the file is truncated")
            }
            for index in 0..<batch.chunks {
                let chunk = batch.firstCounter + UInt64(index)
                let endOfInput = batch.atEnd && index == batch.chunks - 1
                guard let plaintext = batch.results[index] else {
                    let size = min(STREAM.sealedChunkSize, batch.inputBytes - index * STREAM.sealedChunkSize)
                    if size < STREAM.tagSize {
                        throw CofferError(.malformedPayload, "payload chunk \(chunk) is \(size) bytes, too short to hold its tag: the file is truncated")
                    }
                    throw CofferError(.payloadAuthenticationFailed, "payload chunk \(chunk) failed to authenticate: the file was modified or corrupted")
                }
                batch.results[index] = nil
                let isFinal = batch.finals[index]
                if isFinal && plaintext.isEmpty && chunk > 0 {
                    throw CofferError(.malformedPayload, "the final chunk is empty, which only an empty file may have")
                }
                try plaintext.withUnsafeBytes { try sink.write($0) }
                total += Int64(plaintext.count)
                if isFinal && !endOfInput {
                    throw CofferError(.malformedPayload, "data follows the final chunk (\(chunk)): the file was extended")
                }
                if !isFinal && endOfInput {
                    throw CofferError(.malformedPayload, "the payload ends after chunk \(chunk), which is not marked final: the file is truncated")
                }
            }
            progress?(total)
        }
    }
}
