import ArgumentParser
import Coffer
import CofferStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the job commands report: a line per batch on a terminal, the
/// report on standard output at the end. Run again after an interruption
/// and the job resumes.
enum StoreJobOutput {
    static func progress(_ what: String) -> (StoreProgress) -> Void {
        let terminal = isatty(STDERR_FILENO) == 1
        return { step in
            guard terminal else { return }
            let percent = step.total > 0 ? step.done * 100 / step.total : 100
            StandardError.write("\rcoffer: \(what) \(step.done)/\(step.total) rows (\(percent)%)")
        }
    }

    static func finish(_ report: StoreJobReport) {
        if isatty(STDERR_FILENO) == 1 { StandardError.write("\n") }
        print(report.description)
    }
}

/// `--batch` of the jobs over every row (rotate, reindex, migrate),
/// refused when below 1 before the store is opened.
struct StoreJobBatch: ParsableArguments {
    @Option(help: "Rows per transaction.") var batch = 1000

    func validate() throws {
        guard batch > 0 else { throw ValidationError("--batch is at least 1") }
    }
}

extension StoreOptions {
    /// Runs `job`, a job over every row of the store in transactions of
    /// `rows.batch` rows, on the opened store (its batch size and progress
    /// reporter given), then prints its report.
    func runJob(
        _ kek: KEKOptions, _ what: String, _ rows: StoreJobBatch,
        _ job: (RecordStore, Int, (StoreProgress) -> Void) throws -> StoreJobReport
    ) async throws {
        StoreJobOutput.finish(try job(try await open(kek), rows.batch, StoreJobOutput.progress(what)))
    }
}

extension StoreOptions {
    /// Runs `job` over `tenant` (every tenant when nil) of `table`, a table
    /// kept per tenant, with a progress reporter; returns its report.
    func tenantJob(
        _ kek: KEKOptions, table: String, tenant: String?, _ what: String,
        _ job: (RecordStore, String, StoreValue?, (StoreProgress) -> Void) throws -> TenantRotation
    ) async throws -> TenantRotation {
        let opened = try await open(kek)
        let kept = try opened.schema.table(table)
        guard let name = kept.tenant, let field = kept.field(name) else {
            throw CLIFailure("\(kept.name) is not kept per tenant: its schema names no tenant field", status: 64)
        }
        let value = try tenant.map { try RecordJSON.value(argument: $0, field: field, table: kept.name) }
        let report = try job(opened, kept.name, value, StoreJobOutput.progress(what))
        if isatty(STDERR_FILENO) == 1 { StandardError.write("\n") }
        return report
    }
}

extension StoreCommand {
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal every cell under a new key, then disable the old keys (resumable; writers keep going).",
            discussion: """
                With --table T of a table kept per tenant, and --tenant ID or --every-tenant, rotates that \
                tenant's own data key (or each tenant's) instead: its cells sealed again under a new key, then \
                the old key destroyed (resumable).
                """)
        @OptionGroup var store: StoreOptions
        @OptionGroup var kek: KEKOptions
        @OptionGroup var rows: StoreJobBatch
        @Option(help: "A table kept per tenant, whose tenants' keys to rotate.") var table: String?
        @Option(help: "The tenant whose key to rotate (with --table).") var tenant: String?
        @Flag(help: "Rotate every tenant's key (with --table).") var everyTenant = false

        func validate() throws {
            guard (table == nil) == (tenant == nil && !everyTenant), tenant == nil || !everyTenant else {
                throw ValidationError("--table goes with one of --tenant ID or --every-tenant")
            }
        }

        func run() async throws {
            guard let table else {
                try await store.runJob(kek, "re-sealed", rows) { try $0.rotateKeys(batchSize: $1, progress: $2) }
                return
            }
            let report = try await store.tenantJob(kek, table: table, tenant: tenant, "re-sealed") {
                try $0.rotateTenantKeys($1, tenant: $2, batchSize: rows.batch, progress: $3)
            }
            print("rotated \(report.tenants) tenants' keys: \(report.rows) rows, \(report.cells) cells sealed again")
        }
    }

    struct Reindex: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move every blind index to a new index key; finds keep working throughout (resumable).",
            discussion: """
                With --table T of a table kept per tenant, and --tenant ID or --every-tenant, moves that \
                tenant's indexes (or each tenant's) to a new index root of its own instead, then destroys the \
                old root (resumable).
                """)
        @OptionGroup var store: StoreOptions
        @OptionGroup var kek: KEKOptions
        @OptionGroup var rows: StoreJobBatch
        @Option(help: "A table kept per tenant, whose tenants' indexes to move.") var table: String?
        @Option(help: "The tenant whose indexes to move (with --table).") var tenant: String?
        @Flag(help: "Move every tenant's indexes (with --table).") var everyTenant = false

        func validate() throws {
            guard (table == nil) == (tenant == nil && !everyTenant), tenant == nil || !everyTenant else {
                throw ValidationError("--table goes with one of --tenant ID or --every-tenant")
            }
        }

        func run() async throws {
            guard let table else {
                try await store.runJob(kek, "reindexed", rows) { try $0.reindex(batchSize: $1, progress: $2) }
                return
            }
            let report = try await store.tenantJob(kek, table: table, tenant: tenant, "reindexed") {
                try $0.reindexTenant($1, tenant: $2, batchSize: rows.batch, progress: $3)
            }
            print(
                "reindexed \(report.tenants) tenants: \(report.rows) rows, \(report.cells) index values under a new root"
            )
        }
    }
}

struct StoreMigrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Seal a clear text or integer field in place, searchable throughout (resumable).",
        discussion: """
            A plain SQLite database becomes a store with `coffer store init --adopt`, its schema listing the \
            tables as they are, every field clear. Then each field to protect is sealed with migrate: \
            --index NAME,BITS[,TRANSFORM…] adds a blind index (for example --index email_exact,16,trim,lowercase) \
            and --bind FIELD binds a clear field of the row to each cell. Run the same command again to resume; \
            a resumed migration keeps the indexes and bound fields it began with.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table.") var table: String
    @Option(help: "The clear field to seal.") var field: String
    @Option(help: "A clear field of the row each cell binds (repeat for more).") var bind: [String] = []
    @Option(help: "A blind index: NAME,BITS[,TRANSFORM…] (repeat for more).") var index: [String] = []
    @OptionGroup var rows: StoreJobBatch

    func run() async throws {
        let indexes = try index.map(Self.parseIndex)
        let report = try await store.open(kek).migrate(
            table, field: field, bind: bind, indexes: indexes, batchSize: rows.batch,
            progress: StoreJobOutput.progress("sealed"))
        StoreJobOutput.finish(report)
    }

    static func parseIndex(_ text: String) throws -> StoreSchema.Index {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, let bits = Int(parts[1]) else {
            throw ValidationError("--index is NAME,BITS[,TRANSFORM…], for example email_exact,16,trim,lowercase")
        }
        return StoreSchema.Index(
            name: parts[0], transforms: try parts.dropFirst(2).map(IndexTransform.init(parsing:)), bits: bits)
    }
}

struct StorePlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Sample a field's real values and recommend a blind index bit length (exit 6 when refused).",
        discussion: """
            Sealed values are opened, clear ones read as they are (a field being migrated is both), the transforms \
            applied (--transforms, or those of the field's first index), and the distinct values counted. The \
            table shows, per bit length, how many distinct values share a bucket and how many rows a query \
            fetches per matching row; the recommendation is the largest length inside √X < 2^bits < X/2. Only \
            counts and shares are printed, never a value.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table.") var table: String
    @Option(help: "The field to index.") var field: String
    @Option(help: "Comma-separated transforms, e.g. trim,lowercase.") var transforms: String?
    @Option(help: "Rows to read at most (at random when the table is larger).") var sample = 100_000

    func run() async throws {
        let steps = try transforms.map { try $0.split(separator: ",").map { try IndexTransform(parsing: String($0)) } }
        let plan = try await store.open(kek).plan(table, field: field, transforms: steps, sampleSize: sample)
        print(plan.description)
        if plan.refusal != nil { throw CLIFailure("no standalone blind index for \(table).\(field)", status: 6) }
    }
}
