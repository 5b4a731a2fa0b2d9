import Coffer
import Dispatch
import Foundation
import Testing

/// The async twins: the same results as the blocking calls, outputs kept
/// only on success, and the blocking work done off the cooperative pool.
@Suite struct AsyncTwinTests {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-async-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    @Test func filesRoundTripAndFailuresLeaveNoOutput() async throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain").path
        let sealed = dir.appendingPathComponent("plain.age").path
        let opened = dir.appendingPathComponent("opened").path
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        FileManager.default.createFile(atPath: plain, contents: Data(bytes))
        let identity = X25519.Identity()

        try await Age.encrypt(file: plain, to: sealed, recipients: [identity.recipient])
        try await Age.decrypt(file: sealed, to: opened, identities: [identity])
        #expect(try Data(contentsOf: URL(fileURLWithPath: opened)) == Data(bytes))
        #expect(try Age.decrypt(Data(contentsOf: URL(fileURLWithPath: sealed)), with: [identity]) == Data(bytes))

        let refused = dir.appendingPathComponent("refused").path
        await #expect(throws: CofferError.self) {
            try await Age.decrypt(file: sealed, to: refused, identities: [X25519.Identity()])
        }
        #expect(!FileManager.default.fileExists(atPath: refused), "a failed decryption left its output")
    }

    @Test func keyRingStoreTwins() async throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = KeyRingStore(
            path: dir.appendingPathComponent("ring").path, secret: .password(Array("pw".utf8)), rollbackGuard: nil)
        let created = try await store.create(kdf: .scrypt(logN: 10, r: 8, p: 1))
        let newPrimary = try await store.modify { file in try file.update { try $0.rotate() } }
        let read = try await store.read()
        #expect(read.generation == created.generation + 1)
        #expect(read.keyRing.keys.contains { $0.id == newPrimary && $0.state == .primary })
    }

    /// More blocking calls than the cooperative pool has threads, all
    /// parked on a semaphore: a task on the pool must still run (and
    /// release them). Were the work on the pool, that task could not
    /// start, and every call would time out instead.
    @Test func blockingWorkLeavesTheCooperativePoolFree() async throws {
        let parked = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let gate = DispatchSemaphore(value: 0)
        let late = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<parked {
                group.addTask { try await BlockingWork.run { gate.wait(timeout: .now() + 10) == .timedOut } }
            }
            group.addTask {
                // Runs on the cooperative pool; releases every parked call.
                for _ in 0..<parked { gate.signal() }
                return false
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(late == 0, "blocking work held the cooperative pool")
    }
}
