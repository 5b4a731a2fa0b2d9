import Crypto
import Foundation

/// Decrypts an age payload stream. A chunk is released only after it has
/// authenticated, and chunks are released in order; an error is raised at
/// the first chunk that fails, after the ones before it.
enum PayloadReader {
    /// - Parameter positional: when set, the payload (nonce first) is this
    ///   slice, read by the workers by offset, and `source` is not read.
    static func read<Source: ByteSource, Sink: ByteSink>(
        fileKey: FileKey, from source: inout Source, positional: PositionalSlice? = nil, to sink: inout Sink,
        progress: ((Int64) -> Void)? = nil
    ) throws {
        var nonce = [UInt8](repeating: 0, count: STREAM.nonceSize)
        let nonceBytes = try nonce.withUnsafeMutableBytes { buffer in
            guard let positional else { return try source.readFully(into: buffer) }
            guard positional.length >= Int64(buffer.count) else { return 0 }
            try positional.source.readExactly(into: buffer, at: positional.start)
            return buffer.count
        }
        guard nonceBytes == STREAM.nonceSize else {
            // The test kit counts the nonce as part of the header.
            throw CofferError(.malformedHeader, "the file ends before its 16-byte payload nonce")
        }
        let key = STREAM.payloadKey(fileKey: fileKey, nonce: nonce)
        let cipher = try ChunkCipher.current(payloadBytes: positional?.length)
        var total: Int64 = 0
        try ChunkPipeline.run(
            inputUnit: STREAM.sealedChunkSize, outputUnit: STREAM.chunkSize, from: &source,
            positional: positional?.dropping(Int64(STREAM.nonceSize))
        ) { batch, index in
            let sealed = batch.chunk(index)
            let output = batch.outputSlot(index)
            let chunk = batch.firstCounter + UInt64(index)
            // Only a short chunk is known to be the last; a full one may be
            // either, so it is tried as a middle chunk first.
            if sealed.count == STREAM.sealedChunkSize,
                STREAM.open(sealed, into: output, counter: chunk, last: false, key: key, cipher: cipher)
            {
                return .done
            }
            return STREAM.open(sealed, into: output, counter: chunk, last: true, key: key, cipher: cipher)
                ? .doneFinal : .failed
        } emit: { batch in
            guard batch.inputBytes > 0 else {
                throw CofferError(.malformedPayload, "the payload has no chunks: the file is truncated")
            }
            // The authenticated chunks before the first problem lie end to
            // end in the output buffer; they are written, then the error
            // is raised.
            var ready = 0
            var failure: CofferError?
            for index in 0..<batch.chunks {
                let chunk = batch.firstCounter + UInt64(index)
                let endOfInput = batch.atEnd && index == batch.chunks - 1
                let size = min(STREAM.sealedChunkSize, batch.inputBytes - index * STREAM.sealedChunkSize)
                let status = batch.status[index]
                guard status == .done || status == .doneFinal else {
                    if size < STREAM.tagSize {
                        failure = CofferError(
                            .malformedPayload,
                            "payload chunk \(chunk) is \(size) bytes, too short to hold its tag: the file is truncated")
                    } else if endOfInput && size < STREAM.sealedChunkSize {
                        // A short last chunk that does not open: a file cut
                        // short, or an end modified; the two look the same.
                        failure = CofferError(
                            .payloadAuthenticationFailed,
                            "payload chunk \(chunk), the file's last, failed to authenticate: the file is truncated (cut short) or was modified"
                        )
                    } else {
                        failure = CofferError(
                            .payloadAuthenticationFailed,
                            "payload chunk \(chunk) failed to authenticate: the file was modified or corrupted")
                    }
                    break
                }
                let isFinal = status == .doneFinal
                if isFinal && size == STREAM.tagSize && chunk > 0 {
                    failure = CofferError(
                        .malformedPayload, "the final chunk is empty, which only an empty file may have")
                    break
                }
                ready += size - STREAM.tagSize
                if isFinal && !endOfInput {
                    failure = CofferError(
                        .malformedPayload, "data follows the final chunk (\(chunk)): the file was extended")
                    break
                }
                if !isFinal && endOfInput {
                    failure = CofferError(
                        .malformedPayload,
                        "the payload ends after chunk \(chunk), which is not marked final: the file is truncated")
                    break
                }
            }
            if ready > 0 { try sink.write(UnsafeRawBufferPointer(rebasing: batch.output[..<ready])) }
            total += Int64(ready)
            // Told before a failure too: what was written is the caller's to count.
            if ready > 0 || failure == nil { progress?(total) }
            if let failure { throw failure }
        }
    }
}
