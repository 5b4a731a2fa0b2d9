#if Server
import Coffer
import CofferStore
import Foundation
import GRDB
import Logging
import NIOCore
import PostgresNIO

/// One PostgreSQL connection inside a transaction. The store's SQL is
/// written with `?` placeholders and `IS ?` for null-safe equality; here
/// they become `$1…` and `IS NOT DISTINCT FROM $n`. Used by one thread at
/// a time, the one running the transaction.
final class PostgresStoreConnection: StoreConnection {
    let connection: PostgresConnection
    let logger: Logger
    var dialect: StoreDialect { .postgres }
    /// Statements sent and not waited for yet; their errors surface at the next wait.
    private var queued: [EventLoopFuture<PostgresQueryResult>] = []
    /// For a read outside a transaction: the epoch its one statement must see.
    private let expecting: UInt64?
    private var statements = 0
    /// Set when such a read found another epoch or needed a second
    /// statement (even if the caller swallowed the error).
    private(set) var snapshotFailed = false

    /// Why a read outside a transaction gives up (the caller reads again in one).
    struct SnapshotMiss: Error {}

    /// The columns a snapshot read adds; no store column is named so (names
    /// are plain identifiers).
    static let epochColumn = "coffer epoch"
    static let rowColumn = "coffer row"

    init(connection: PostgresConnection, logger: Logger, expecting: UInt64? = nil) {
        self.connection = connection
        self.logger = logger
        self.expecting = expecting
    }

    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]] {
        guard let expecting else { return try Self.columns(run(sql, arguments)) }
        statements += 1
        // One statement only; and the join below would not keep an order.
        guard statements == 1, !sql.contains("ORDER BY") else { throw miss() }
        let wrapped =
            "SELECT m.value AS \"\(Self.epochColumn)\", q.* FROM \(StoreSQL.metaTable) m LEFT JOIN (SELECT true AS \"\(Self.rowColumn)\", s.* FROM (\(sql)) s) q ON true WHERE m.name = 'epoch'"
        var rows = try Self.columns(run(wrapped, arguments))
        guard case .blob(let epoch)? = rows.first?[Self.epochColumn]?.storage, epoch.count == 8,
            epoch.reduce(UInt64(0), { $0 << 8 | UInt64($1) }) == expecting
        else { throw miss() }
        rows = rows.filter { $0[Self.rowColumn].map { !$0.isNull } ?? false }
        return rows.map { row in row.filter { $0.key != Self.epochColumn && $0.key != Self.rowColumn } }
    }

    func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int {
        guard expecting == nil else { throw miss() }
        return try run(sql, arguments).metadata.rows ?? 0
    }

    private func miss() -> SnapshotMiss {
        snapshotFailed = true
        return SnapshotMiss()
    }

    private static func columns(_ result: PostgresQueryResult) throws -> [[String: DatabaseValue]] {
        try result.rows.map { row in
            var columns: [String: DatabaseValue] = [:]
            for cell in row { columns[cell.columnName] = try value(cell) }
            return columns
        }
    }

    /// Sends a statement without waiting for it.
    func queue(_ sql: String, _ arguments: [DatabaseValue] = []) {
        queued.append(send(sql, arguments))
    }

    /// Sent now, its rows read when asked (by then the statements sent
    /// after it have usually been waited for: no round trip of its own).
    func prefetch(_ sql: String, _ arguments: [DatabaseValue]) -> () throws -> [[String: DatabaseValue]] {
        let answer = send(sql, arguments)
        return {
            do { return try Self.columns(try answer.wait()) } catch { throw Self.coffer(error) }
        }
    }

    /// Queued: waited for with the next statement (COMMIT at the latest).
    func executeDeferred(_ sql: String, _ arguments: [DatabaseValue]) throws {
        guard expecting == nil else { throw miss() }
        queue(sql, arguments)
    }

    func tableExists(_ name: String) throws -> Bool {
        try integer(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?",
            [name.databaseValue]) ?? 0 > 0
    }

    /// Sends a statement, then waits for those queued before it and for it.
    private func run(_ sql: String, _ arguments: [DatabaseValue]) throws -> PostgresQueryResult {
        let answer = send(sql, arguments)
        let earlier = queued
        queued = []
        do {
            for statement in earlier { _ = try statement.wait() }
            return try answer.wait()
        } catch {
            throw Self.coffer(error)
        }
    }

    private func send(_ sql: String, _ arguments: [DatabaseValue]) -> EventLoopFuture<PostgresQueryResult> {
        var bindings = PostgresBindings()
        for argument in arguments {
            switch argument.storage {
            case .null: bindings.appendNull()
            case .int64(let number): bindings.append(number)
            case .double(let number): bindings.append(number)
            case .string(let text): bindings.append(text)
            case .blob(let data): bindings.append(ByteBuffer(bytes: data))
            }
        }
        return connection.query(PostgresQuery(unsafeSQL: Self.translate(sql), binds: bindings), logger: logger)
    }

    /// Translations already made: the store sends a few dozen distinct
    /// statements, each many times. Bounded, so that the multi-row INSERTs
    /// of odd batch sizes cannot grow it without end.
    private static let translated = Locked([String: String]())
    static let translationsKept = 512
    static var cachedTranslations: Int { translated.withLock(\.count) }

    /// `?` → `$n` (outside quotes), `IS ?` → `IS NOT DISTINCT FROM $n`.
    static func translate(_ sql: String) -> String {
        if let known = translated.withLock({ $0[sql] }) { return known }
        let result = translation(of: sql)
        translated.withLock { cache in
            if cache.count >= translationsKept { cache.removeAll(keepingCapacity: true) }
            cache[sql] = result
        }
        return result
    }

    static func translation(of sql: String) -> String {
        var result = ""
        var number = 0
        var quoted: Character?
        for character in sql.replacingOccurrences(of: " IS ?", with: " IS NOT DISTINCT FROM ?") {
            if let open = quoted {
                if character == open { quoted = nil }
                result.append(character)
            } else if character == "'" || character == "\"" {
                quoted = character
                result.append(character)
            } else if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    static func value(_ cell: PostgresCell) throws -> DatabaseValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return try cell.decode(Int64.self).databaseValue
        case .bytea:
            var buffer = try cell.decode(ByteBuffer.self)
            return Data(buffer.readBytes(length: buffer.readableBytes) ?? []).databaseValue
        case .float4, .float8: return try cell.decode(Double.self).databaseValue
        case .bool: return (try cell.decode(Bool.self) ? 1 : 0).databaseValue
        default: return try cell.decode(String.self).databaseValue
        }
    }

    /// PostgreSQL's error as a Coffer error: a unique violation is
    /// `refused`; the server's message, never the query's values.
    static func coffer(_ error: any Error) -> CofferError {
        if PostgresFailure.isUniqueViolation(error) {
            return CofferError(.refused, "a record with this primary key exists")
        }
        return CofferError(.io, "the store's database failed: \(PostgresFailure.reason(error))")
    }
}
#endif
