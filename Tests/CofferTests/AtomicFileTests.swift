import Foundation
import Testing

@testable import Coffer

#if canImport(Glibc)
import Glibc
#endif

@Suite struct AtomicFileTests {
    func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func contents(_ url: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
    }

    @Test func commitReplacesAndAbortLeavesNothing() throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("out").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))

        let aborted = try AtomicFile(destination: path)
        var sink = aborted.sink
        try sink.write(Array("partial".utf8))
        aborted.abort()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("old".utf8))
        #expect(contents(folder) == ["out"])

        let committed = try AtomicFile(destination: path)
        sink = committed.sink
        try sink.write(Array("new".utf8))
        try committed.commit()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("new".utf8))
        #expect(contents(folder) == ["out"])
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// The sink starts writeback every 8 MiB (sync_file_range); what is
    /// committed is every byte, in order, whether or not a write crosses
    /// the interval, and the file left open keeps its offset.
    @Test func writebackKeepsEveryByte() throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("big").path
        let file = try AtomicFile(destination: path)
        var sink = file.sink
        var expected: [UInt8] = []
        for (index, size) in [1, 3 << 20, 9 << 20, 65536, 7 << 20, 12345].enumerated() {
            var piece = [UInt8](repeating: UInt8(index + 1), count: size)
            piece[size / 2] = 0xEE
            try sink.write(piece)
            expected += piece
        }
        try file.commit()
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == expected)
    }

    @Test func noReplaceRefusesAnExistingFileAndKeepsIt() throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("key").path
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        let file = try AtomicFile(destination: path)
        var sink = file.sink
        try sink.write(Array("other".utf8))
        #expect(throws: CofferError(.refused, "")) { try file.commit(replace: false) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("keep me".utf8))
        #expect(contents(folder) == ["key"])
    }

    @Test func aDroppedWriterCleansUp() throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let file = try AtomicFile(destination: folder.appendingPathComponent("x").path)
            var sink = file.sink
            try sink.write([1, 2, 3])
        }
        #expect(contents(folder).isEmpty)
    }
}

extension AtomicFileTests {
    /// Read-modify-write under `withExclusiveLock`: 4 threads × 50
    /// increments of a counter file lose none (each thread opens the lock
    /// file itself, so flock serialises them as it does processes); stale
    /// temporary files are swept; a symlinked lock file is refused.
    @Test func exclusiveLockSerialisesReadModifyWrite() throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("counter").path
        try Data("0".utf8).write(to: URL(fileURLWithPath: path))
        try Data("left by a killed writer".utf8).write(
            to: folder.appendingPathComponent(".counter.coffer-0badc0ffee00"))
        // Last written a minute ago, and nobody holds its lock: provably stale.
        var old = [timespec(tv_sec: time(nil) - 60, tv_nsec: 0), timespec(tv_sec: time(nil) - 60, tv_nsec: 0)]
        utimensat(AT_FDCWD, folder.appendingPathComponent(".counter.coffer-0badc0ffee00").path, &old, 0)
        try Data("another file's".utf8).write(to: folder.appendingPathComponent(".other.coffer-0badc0ffee00"))

        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<50 {
                do {
                    try AtomicFile.withExclusiveLock(on: path) {
                        let value = Int(
                            String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self))!
                        let file = try AtomicFile(destination: path)
                        var sink = file.sink
                        try sink.write(Array(String(value + 1).utf8))
                        try file.commit()
                    }
                } catch {
                    failures.add()
                }
            }
        }
        #expect(failures.value == 0)
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self) == "200")
        #expect(contents(folder) == [".counter.lock", ".other.coffer-0badc0ffee00", "counter"])

        try FileManager.default.removeItem(atPath: AtomicFile.lockPath(for: path))
        try FileManager.default.createSymbolicLink(atPath: AtomicFile.lockPath(for: path), withDestinationPath: "/tmp")
        #expect(throws: CofferError(.insecurePermissions, "")) { try AtomicFile.withExclusiveLock(on: path) {} }
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() {
        lock.lock()
        count += 1
        lock.unlock()
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}
