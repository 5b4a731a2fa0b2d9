import Coffer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Anchors kept as files in a folder of this user, one per store
/// (`STORE-ID.json`): by default `anchors/` in the state folder that keeps
/// the rollback marks (`$COFFER_STATE_DIR`, else `$XDG_STATE_HOME/coffer`,
/// else `~/.local/state/coffer`). Every process of this user on this
/// machine shares them; each update is a read-modify-write under the
/// file's lock, replaced atomically, so `kill -9` leaves the old state or
/// the new one, and two processes never move it backwards.
public struct FolderStoreAnchor: StoreAnchor {
    public let folder: String

    public init(folder: String) { self.folder = folder }

    /// The anchors folder of this user's state folder.
    public static var user: FolderStoreAnchor {
        FolderStoreAnchor(
            folder: (StateFileRollbackGuard.defaultPath as NSString).deletingLastPathComponent + "/anchors")
    }

    public var location: String { folder }

    func path(_ storeID: String) throws -> String {
        guard storeID.count == 32, storeID.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw CofferError(.invalidArgument, "a store id is 32 lowercase hex digits")
        }
        return folder + "/" + storeID + ".json"
    }

    public func anchoredState(store storeID: String) throws -> StoreAnchorState? {
        let path = try path(storeID)
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw CofferError(.io, "cannot read the store anchor \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        try PrivateFile.check(descriptor: descriptor, path: path, what: "the store anchor", allowGroupRead: true)
        let bytes = try PrivateFile.readAll(
            descriptor: descriptor, limit: 1 << 16, path: path, what: "the store anchor")
        do { return try StoreAnchorState(json: Data(bytes)) } catch let error as CofferError {
            throw error.prefixed(path)
        }
    }

    @discardableResult
    public func publish(_ state: StoreAnchorState, store storeID: String) throws -> StoreAnchorState {
        let path = try path(storeID)
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return try AtomicFile.withExclusiveLock(on: path) {
            if let anchored = try anchoredState(store: storeID) {
                switch state.compared(to: anchored) {
                case .same, .older: return anchored
                case .forked: throw StoreAnchors.forked(state, anchored, at: path)
                case .newer: break
                }
            }
            try write(state, to: path)
            return state
        }
    }

    public func accept(_ state: StoreAnchorState, store storeID: String) throws {
        let path = try path(storeID)
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try AtomicFile.withExclusiveLock(on: path) { try write(state, to: path) }
    }

    private func write(_ state: StoreAnchorState, to path: String) throws {
        let file = try AtomicFile(destination: path, mode: 0o600)
        var sink = file.sink
        do {
            try sink.write(Array(try state.json()))
            try file.commit()
        } catch {
            file.abort()
            throw error
        }
    }
}

/// What the anchors of a store say when they refuse it.
enum StoreAnchors {
    static func forked(_ state: StoreAnchorState, _ anchored: StoreAnchorState, at location: String) -> CofferError {
        CofferError(
            .rolledBack,
            "the store's state (\(state)) is not a continuation of the one anchored at \(location) (\(anchored)): its database was restored to an older state and written since"
        )
    }

    static func older(_ state: StoreAnchorState, _ anchored: StoreAnchorState, at location: String) -> CofferError {
        CofferError(
            .rolledBack,
            "the store's database (\(state)) is older than the state anchored at \(location) (\(anchored)): an older copy of it was put back"
        )
    }
}
