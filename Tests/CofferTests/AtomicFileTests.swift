@testable import Coffer
import Foundation
import Testing

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

    @Test func noReplaceRefusesAnExistingFileAndKeepsIt() throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("key").path
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        let file = try AtomicFile(destination: path)
        var sink = file.sink
        try sink.write(Array("other".utf8))
        #expect(throws: CofferError(.io, "")) { try file.commit(replace: false) }
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
