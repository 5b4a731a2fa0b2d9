import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads any byte range of a binary age file without decrypting from the
/// start: it opens only the 64 KiB chunks that hold the range.
///
/// ```swift
/// let file = try AgeRandomAccessFile(path: "video.age", identities: [identity])
/// let bytes = try file.read(offset: 1 << 30, count: 4096)
/// ```
///
/// Opening checks the header MAC and authenticates the last chunk as final,
/// so `plaintextSize` is trustworthy (c2sp.org/age: seeking relative to the
/// end must first verify the final chunk). Every read authenticates each
/// chunk it touches. Safe to use from several threads: reads use `pread`.
/// Armored files have no fixed chunk offsets and are refused.
public final class AgeRandomAccessFile: Sendable {
    public let plaintextSize: Int64
    private let descriptor: Int32
    private let reader: FileDescriptorReader
    private let cipher: ChunkCipher
    private let key: SymmetricKey
    private let payloadStart: Int64
    private let sealedSize: Int64
    private let chunkCount: Int64

    public init(path: String, identities: [any Identity]) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CofferError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        do {
            var reader = LineReader(FileDescriptorSource(fileDescriptor: fd))
            guard !(try Armor.detect(&reader)) else {
                throw CofferError(.unsupported, "random access needs the binary form of an age file, not armor")
            }
            let header = try Header.read(from: &reader)
            let fileKey = try Age.unwrap(header, identities: identities)
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw CofferError(.io, "cannot stat \(path)") }
            let headerSize = Int64(header.encoded.count)
            guard Int64(info.st_size) >= headerSize + Int64(STREAM.nonceSize) else {
                throw CofferError(.malformedHeader, "the file ends before its 16-byte payload nonce")
            }
            let positional = FileDescriptorReader(fileDescriptor: fd)
            self.reader = positional
            cipher = try ChunkCipher.current()
            var nonce = [UInt8](repeating: 0, count: STREAM.nonceSize)
            try nonce.withUnsafeMutableBytes { try positional.readExactly(into: $0, at: headerSize) }
            key = STREAM.payloadKey(fileKey: fileKey, nonce: nonce)
            payloadStart = headerSize + Int64(STREAM.nonceSize)
            sealedSize = Int64(info.st_size) - payloadStart
            let sealedChunk = Int64(STREAM.sealedChunkSize)
            chunkCount = (sealedSize + sealedChunk - 1) / sealedChunk
            let lastSize = sealedSize - (chunkCount - 1) * sealedChunk
            guard chunkCount > 0, lastSize >= Int64(STREAM.tagSize) else {
                throw CofferError(.malformedPayload, "the payload is truncated")
            }
            plaintextSize = sealedSize - chunkCount * Int64(STREAM.tagSize)
            descriptor = fd
            let last = try openChunk(chunkCount - 1)
            if last.isEmpty && chunkCount > 1 {
                throw CofferError(.malformedPayload, "the final chunk is empty, which only an empty file may have")
            }
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(descriptor) }

    /// Decrypts `count` bytes from `offset` (fewer at the end of the file).
    public func read(offset: Int64, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0 else { throw CofferError(.invalidArgument, "negative offset or count") }
        // Saturating: an offset near Int64.max with any count reads nothing, never traps.
        let (sum, overflow) = offset.addingReportingOverflow(Int64(count))
        let end = min(plaintextSize, overflow ? Int64.max : sum)
        guard offset < end else { return [] }
        var output: [UInt8] = []
        output.reserveCapacity(Int(end - offset))
        let chunk = Int64(STREAM.chunkSize)
        for index in (offset / chunk)...((end - 1) / chunk) {
            let plaintext = try openChunk(index)
            let chunkStart = index * chunk
            let from = Int(max(offset, chunkStart) - chunkStart)
            let to = Int(min(end, chunkStart + Int64(plaintext.count)) - chunkStart)
            output += plaintext[from..<to]
        }
        return output
    }

    private func openChunk(_ index: Int64) throws -> [UInt8] {
        let sealedChunk = Int64(STREAM.sealedChunkSize)
        let start = index * sealedChunk
        var sealed = [UInt8](repeating: 0, count: Int(min(sealedChunk, sealedSize - start)))
        do {
            try sealed.withUnsafeMutableBytes { try reader.readExactly(into: $0, at: payloadStart + start) }
        } catch {
            throw CofferError(.io, "the file changed or could not be read while it was open")
        }
        // Opened in place: the plaintext is the sealed chunk's prefix.
        let opened = sealed.withUnsafeMutableBytes { buffer in
            STREAM.open(
                UnsafeRawBufferPointer(buffer), into: buffer, counter: UInt64(index), last: index == chunkCount - 1,
                key: key, cipher: cipher)
        }
        guard opened else {
            throw CofferError(
                .payloadAuthenticationFailed,
                "payload chunk \(index) failed to authenticate: the file was modified, truncated or extended")
        }
        sealed.removeLast(STREAM.tagSize)
        return sealed
    }
}
