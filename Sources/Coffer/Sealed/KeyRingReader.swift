import Crypto

/// A key ring file read again and again by a long-running process (a key
/// server picking up a `kek rotate` made by another process): each
/// ``read()`` reads the file and checks its rollback mark, as
/// ``KeyRingStore/read()`` does, but unlocks it (scrypt, or a keychain's
/// key) only when its bytes differ from the last bytes it unlocked. Those
/// same bytes decrypt to the same ring, and an unlock is the one costly
/// step: scrypt at ``PasswordKDF/defaultScrypt`` fills 128 MiB and takes
/// about 0.4 s of one core, which a server rereading its ring every 30
/// seconds used to spend on one of the threads serving requests.
package final class KeyRingReader: Sendable {
    package let store: KeyRingStore
    /// The last bytes unlocked (their digest) and what they held, and how
    /// many reads unlocked the file.
    private let state = Locked<(last: (digest: SHA256.Digest, file: KeyRingFile)?, unlocks: Int)>((nil, 0))

    package init(_ store: KeyRingStore) { self.store = store }

    /// The file as it is now; `rolledBack` when it is older than a
    /// generation already written, whether or not it was unlocked again.
    package func read() throws -> KeyRingFile {
        let bytes = try store.readBytes()
        let digest = SHA256.hash(data: bytes)
        let cached = state.withLock { $0.last }.flatMap { $0.digest == digest ? $0.file : nil }
        let file = try store.read(bytes: bytes, unlocked: cached)
        if cached == nil { state.withLock { $0 = ((digest, file), $0.unlocks + 1) } }
        return file
    }

    /// ``KeyRingStore/create(_:kdf:)``, after which ``read()`` need not
    /// unlock the file it wrote (unless it has changed since).
    @discardableResult
    package func create() throws -> KeyRingFile {
        let file = try store.create()
        let bytes = try store.readBytes()
        if let peek = KeyRingFile.peekGeneration(bytes), peek.ringID == file.ringID,
            peek.generation == file.generation
        {
            state.withLock { $0.last = (SHA256.hash(data: bytes), file) }
        }
        return file
    }

    /// How many reads unlocked the file.
    package var unlocks: Int { state.withLock { $0.unlocks } }
}
