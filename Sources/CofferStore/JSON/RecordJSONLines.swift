import Coffer
import Foundation

/// Records read from JSON (``RecordJSON``): one object (up to 16 MiB), or
/// JSON lines of any length, as `coffer store put` reads them. A reader
/// thread takes the input a few MiB at a time and parses each piece's
/// lines on every core, while the caller's thread unlocks the store and
/// then writes what was parsed, batch by batch: the key derivation, the
/// parsing and the writing overlap.
///
/// ```swift
/// let stored = try RecordJSONLines(batch: 25_000).put(
///     from: FileDescriptorSource(fileDescriptor: descriptor), regularFile: true, into: "notes",
///     open: { try RecordStore.open(sqlite: path, secret: .password(password)) })
/// ```
///
/// A bad line stops the reading before its batch, with an error that
/// names the line; every batch before it is written.
public final class RecordJSONLines: @unchecked Sendable {
    public let batch: Int
    /// The longest line taken, so that a file with no newline cannot grow the buffer without end.
    static let longestLine = 64 << 20
    static let readSize = 4 << 20

    /// What the reader hands over: the records of one piece, in order, and
    /// the first bad line of it, if any (the reader stops there).
    struct Piece {
        var records: [StoreRecord]
        var failure: CofferError?
    }

    private let condition = NSCondition()
    private var pieces: [Piece] = []
    private var table: StoreSchema.Table?
    private var stopped = false
    private var finished = false
    /// Whether the first record was parsed (before the store opened), and
    /// its failure: a file whose first record is malformed is refused
    /// before the key derivation, since nothing before it is to be written.
    private var firstChecked = false
    private var firstFailure: CofferError?

    /// - Parameter batch: records per transaction (at least 1).
    public init(batch: Int = 25_000) {
        precondition(batch > 0, "a batch holds at least one record")
        self.batch = batch
    }

    /// Reads the records from `source` into `table`, each batch in one
    /// transaction, and gives each committed batch's primary keys to
    /// `committed` before the next is written.
    ///
    /// - Parameters:
    ///   - source: where the JSON is read from (a file, a pipe, a terminal).
    ///   - regularFile: `source` is a file, read ahead while the store
    ///     opens (a malformed first record is refused before `open` runs);
    ///     false for a pipe or a terminal, which is not touched before the
    ///     store is open (a password may be asked for first).
    ///   - table: the table the records go into.
    ///   - open: opens the store, on the caller's thread.
    ///   - committed: called with each batch's primary keys once it is committed.
    /// - Returns: the number of records stored.
    @discardableResult
    public func put(
        from source: FileDescriptorSource, regularFile: Bool, into table: String, open: () throws -> RecordStore,
        committed: ([StoreValue]) -> Void = { _ in }
    ) throws -> Int {
        var stored = 0
        try run(source, regularFile: regularFile, tableName: table, open: open) { store, table, next in
            try store.put(batches: next, into: table.name) { keys in
                stored += keys.count
                committed(keys)
            }
        }
        return stored
    }

    /// Reads `source` on a thread of its own, opens the store with `open` on
    /// this one, and calls `write` with a function that gives the next
    /// batch of `batch` records in order (the last may be smaller; nil
    /// after it). A bad line stops the import before its batch: that
    /// function gives every batch before it, then throws the error naming it.
    public func run(
        _ source: FileDescriptorSource, regularFile: Bool, tableName: String, open: () throws -> RecordStore,
        write: (RecordStore, StoreSchema.Table, _ next: () throws -> [StoreRecord]?) throws -> Void
    ) throws {
        // The reader alone touches the source until it finishes, waited for below.
        nonisolated(unsafe) let source = source
        let reader = Thread { [self] in
            var source = source
            let piece: Piece
            do {
                try read(&source)
                piece = Piece(records: [], failure: nil)
            } catch let error as CofferError {
                piece = Piece(records: [], failure: error)
            } catch {
                piece = Piece(records: [], failure: CofferError(.io, "\(error)"))
            }
            if piece.failure != nil { _ = hand(piece) }
            condition.withLock {
                finished = true
                condition.broadcast()
            }
        }
        reader.start()
        defer {
            condition.withLock {
                stopped = true
                condition.broadcast()
                // A file's reader is waited for before the file is closed; a
                // pipe's or a terminal's may wait on input that never comes,
                // and the command ends without it.
                while !finished && regularFile { condition.wait() }
            }
        }
        // A file is read ahead while this thread waits for its first
        // record's parse (a terminal or a pipe is not: a passphrase may be
        // asked for first).
        if regularFile, let failure = awaitFirstRecord() { throw failure }
        let store = try open()
        let table = try store.schema.table(tableName)
        condition.withLock {
            self.table = table
            condition.broadcast()
        }
        var carry: [StoreRecord] = []
        var failure: CofferError?
        var done = false
        try write(store, table) {
            while carry.count < batch && failure == nil && !done {
                guard let piece = next() else {
                    done = true
                    break
                }
                carry += piece.records
                failure = piece.failure
            }
            if carry.count >= batch || (failure == nil && !carry.isEmpty) {
                let part = Array(carry.prefix(batch))
                carry.removeFirst(part.count)
                return part
            }
            if let failure { throw failure }
            return nil
        }
    }

    /// The next piece, or nil once the reader is done.
    private func next() -> Piece? {
        condition.withLock {
            while pieces.isEmpty && !finished { condition.wait() }
            guard !pieces.isEmpty else { return nil }
            condition.broadcast()
            return pieces.removeFirst()
        }
    }

    /// Hands a piece over, waiting while two are queued; false once the
    /// writer stopped.
    func hand(_ piece: Piece) -> Bool {
        condition.withLock {
            while pieces.count >= 2 && !stopped { condition.wait() }
            guard !stopped else { return false }
            pieces.append(piece)
            condition.broadcast()
            return true
        }
    }

    /// Records how the input's first record parsed (only the first call counts).
    func markFirstRecord(_ failure: CofferError?) {
        condition.withLock {
            guard !firstChecked else { return }
            firstChecked = true
            firstFailure = failure
            condition.broadcast()
        }
    }

    /// Waits until the first record was parsed or the reader is done: the
    /// failure that stops the import before anything is written, if any.
    private func awaitFirstRecord() -> CofferError? {
        condition.withLock {
            while !firstChecked && !finished { condition.wait() }
            if let firstFailure { return firstFailure }
            guard !firstChecked, let first = pieces.first, first.records.isEmpty else { return nil }
            return first.failure
        }
    }

    /// The table if the store is open already.
    var knownTable: StoreSchema.Table? { condition.withLock { table } }

    /// The table, once the store is open (nil when the writer stopped first).
    func awaitTable() -> StoreSchema.Table? {
        condition.withLock {
            while table == nil && !stopped { condition.wait() }
            return table
        }
    }
}
