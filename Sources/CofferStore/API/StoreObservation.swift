import Coffer
import Foundation

/// A query's results as they change: the current results at once, then
/// new results after each commit that changes them, from this process,
/// another process on the same SQLite file, or another server on the same
/// PostgreSQL database (docs/store.md, "Live queries").
///
/// ```swift
/// for try await notes in store.observe(Note.self, Note.query.order(by: "createdAt", descending: true)) {
///     model.notes = notes            // a share extension's write shows up here too
/// }
/// ```
///
/// - **Coalesced, in commit order.** Each element is the query run after
///   the latest commit seen: several commits between two looks give one
///   element, and results equal to the last ones give none.
/// - **How commits are seen.** This process's commits wake the observation
///   at its next tick (`tick`, 50 ms by default). Another process's commits
///   on a SQLite file are seen through `PRAGMA data_version` on a read-only
///   connection of the observation's own, read every tick (microseconds; no
///   query runs until it moves). On PostgreSQL the query runs again every
///   `period` (1 s by default) and an element comes when its results differ.
/// - **Ending.** Cancelling the task that iterates ends the sequence (nil),
///   as does closing the store; the observation's connection is closed
///   when its iterator goes. A failing query throws from the iteration.
/// - What crosses into the sequence are the records as `fetchAll` returns
///   them: opened, checked; nothing of them reaches a log.
public struct StoreObservation<Element: Sendable>: AsyncSequence, Sendable {
    let store: RecordStore
    let query: StoreQuery
    let tick: Duration
    let period: Duration
    /// Why the query cannot run (another type's table), thrown by the first element.
    var refusal: CofferError?
    let transform: @Sendable ([StoreRecord]) throws -> Element

    public func makeAsyncIterator() -> Iterator {
        Iterator(observation: self, seenCommits: store.commits.withLock { $0 })
    }

    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let observation: StoreObservation
        var last: [StoreRecord]?
        var seenCommits: UInt64
        var watcher: (any StoreChangeWatcher)?
        var marker: Int64?
        var lastRun = ContinuousClock.now

        init(observation: StoreObservation, seenCommits: UInt64) {
            self.observation = observation
            self.seenCommits = seenCommits
        }

        public mutating func next() async throws -> Element? {
            let store = observation.store
            if last == nil {
                if let refusal = observation.refusal { throw refusal }
                guard !store.closed.withLock({ $0 }) else { return nil }
                watcher = try store.backend.changeWatcher()
                try await look()
                return try await runUnlessClosed()
            }
            while true {
                do { try await Task.sleep(for: observation.tick) } catch { return nil }
                guard !Task.isCancelled, !store.closed.withLock({ $0 }) else { return nil }
                guard try await look() else { continue }
                let before = last
                guard let element = try await runUnlessClosed() else { return nil }
                if last != before { return element }
            }
        }

        /// Whether a commit may have happened since the last look: this
        /// process's count, the watcher's marker (read before the query
        /// runs, so a commit racing it is seen at the next look), or, with
        /// no watcher, the period gone by.
        @discardableResult
        mutating func look() async throws -> Bool {
            var moved = false
            let commits = observation.store.commits.withLock { $0 }
            if commits != seenCommits {
                seenCommits = commits
                moved = true
            }
            if let watcher {
                let now = try await BlockingWork.run { try watcher.marker() }
                if now != marker {
                    marker = now
                    moved = true
                }
            } else if ContinuousClock.now - lastRun >= observation.period {
                moved = true
            }
            return moved
        }

        /// ``run()``, or nil when the store was closed meanwhile (the
        /// close, not the query, ended it).
        mutating func runUnlessClosed() async throws -> Element? {
            do { return try await run() } catch let error as CofferError where error.code == .refused {
                if observation.store.closed.withLock({ $0 }) { return nil }
                throw error
            }
        }

        mutating func run() async throws -> Element {
            let (store, query) = (observation.store, observation.query)
            lastRun = ContinuousClock.now
            let records = try await BlockingWork.run { try store.fetchAll(query) }
            last = records
            return try observation.transform(records)
        }
    }
}

/// Tells whether another connection committed to the store's database.
package protocol StoreChangeWatcher: Sendable {
    /// A number that moves whenever a commit happened since the last read.
    func marker() throws -> Int64
}

extension RecordStore {
    /// `query`'s results now and after every commit that changes them
    /// (``StoreObservation``).
    public func observe(_ query: StoreQuery, tick: Duration = .milliseconds(50), period: Duration = .seconds(1))
        -> StoreObservation<[StoreRecord]>
    {
        StoreObservation(store: self, query: query, tick: tick, period: period, refusal: nil) { $0 }
    }

    /// The typed records `query` asks for (every record of `R`'s table when
    /// nil), now and after every commit that changes them.
    ///
    /// ```swift
    /// for try await notes in store.observe(Note.self, Note.query.order(by: "title")) {
    ///     show(notes)  // at once, then after every commit that changes them
    /// }
    /// ```
    public func observe<R: SealedRecord>(
        _ type: R.Type, _ query: StoreQuery? = nil, tick: Duration = .milliseconds(50), period: Duration = .seconds(1)
    ) -> StoreObservation<[R]> {
        var refusal: CofferError?
        let checked: StoreQuery
        do { checked = try R.checked(query) } catch {
            checked = R.query
            refusal = error as? CofferError ?? CofferError(.invalidArgument, "\(error)")
        }
        return StoreObservation(
            store: self, query: checked, tick: tick, period: period, refusal: refusal
        ) { records in try records.map { try R(storeRecord: $0) } }
    }
}
