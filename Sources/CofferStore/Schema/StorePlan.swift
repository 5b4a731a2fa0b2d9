import Coffer
import Foundation
import GRDB

/// What a blind index on a field would leak and cost, worked out from the
/// field's real values (docs/store.md, "Planning an index").
///
/// With X distinct values (after the index's transforms), R rows that have
/// one, and 2^b buckets:
/// - the **band** the anchors use is √X < 2^b < X/2: below it a query
///   drifts toward a scan, above it buckets stop holding two values each;
/// - a bucket holds about X / 2^b distinct values (the *anonymity set*);
/// - a query for a row's value fetches Σ p_v² R true rows plus
///   (1 − Σ p_v²) R / 2^b others, p_v being each value's share; the
///   *multiplier* is the ratio of the two sums.
///
/// The two targets pull apart: a multiplier of 1.5 needs 2^b ≥ 2(X − 1),
/// above the band. The plan recommends the largest length inside the band
/// (privacy first), and says which length would meet 1.5.
public struct StorePlan: Sendable, CustomStringConvertible {
    /// One candidate bit length.
    public struct Candidate: Sendable {
        public var bits: Int
        /// Distinct values sharing a bucket, on average.
        public var anonymitySet: Double
        /// Rows fetched per query over rows that match, for queries of the rows' own values.
        public var multiplier: Double
        /// Inside √X < 2^b < X/2.
        public var inBand: Bool
    }

    public var rows: Int
    public var sampled: Int
    /// Sampled rows with a value the index would keep.
    public var indexable: Int
    public var distinctInSample: Int
    /// Distinct values in the whole table: exact when every row was read,
    /// else the GEE estimate √(N/n)·f₁ + (d − f₁).
    public var estimatedDistinct: Int
    /// The shares of the five commonest values (never the values).
    public var topShares: [Double]
    public var candidates: [Candidate]
    /// The largest length inside the band, or nil when the plan refuses.
    public var recommendedBits: Int?
    /// The smallest length with a multiplier ≤ 1.5.
    public var bitsForMultiplier1_5: Int?
    /// Why a standalone index is refused, if it is.
    public var refusal: String?
    public var warnings: [String]
    /// What the figures mean for this table (a table kept per tenant).
    public var notes: [String] = []

    public var description: String {
        var lines = [
            "\(rows) rows, \(sampled) sampled, \(indexable) with an indexable value",
            "distinct values: \(distinctInSample) in the sample, about \(estimatedDistinct) in all",
            "commonest values' shares: " + topShares.map { String(format: "%.2f%%", $0 * 100) }.joined(separator: ", "),
            "bits  values/bucket  rows fetched per match",
        ]
        for candidate in candidates {
            lines.append(
                String(
                    format: "%4d  %13.2f  %10.2f×%@", candidate.bits, candidate.anonymitySet, candidate.multiplier,
                    candidate.inBand ? "  (in band)" : ""))
        }
        if let refusal { lines.append("refused: " + refusal) }
        if let recommendedBits { lines.append("recommended: \(recommendedBits) bits") }
        if let bitsForMultiplier1_5, let recommendedBits, bitsForMultiplier1_5 > recommendedBits {
            lines.append(
                "a multiplier of 1.5× or less needs \(bitsForMultiplier1_5) bits (above the band: buckets then hold under two values)"
            )
        }
        return (lines + warnings.map { "warning: " + $0 } + notes.map { "note: " + $0 }).joined(separator: "\n")
    }

    /// The plan for values whose counts are `counts`, `sampled` rows read of `rows`.
    public init(counts: [Int], sampled: Int, rows: Int) {
        self.rows = rows
        self.sampled = sampled
        indexable = counts.reduce(0, +)
        distinctInSample = counts.count
        let singletons = counts.filter { $0 == 1 }.count
        if sampled >= rows || sampled == 0 {
            estimatedDistinct = distinctInSample
        } else {
            let scale = (Double(rows) / Double(sampled)).squareRoot()
            estimatedDistinct = Int((scale * Double(singletons)).rounded()) + distinctInSample - singletons
        }
        let total = Double(max(indexable, 1))
        let shares = counts.map { Double($0) / total }.sorted(by: >)
        topShares = Array(shares.prefix(5))
        // Σ p², the chance two rows share a value: from pairs in the
        // sample (unbiased), and never below 1/X, its value with no skew.
        let distinct = Double(max(estimatedDistinct, 1))
        let pairs = counts.reduce(0.0) { $0 + Double($1) * Double($1 - 1) }
        let collision =
            indexable > 1 ? max(pairs / (Double(indexable) * Double(indexable - 1)), 1 / distinct) : 1
        let low = Int(log2(distinct.squareRoot()).rounded(.down)) + 1
        let high = Int(log2(distinct / 2).rounded(.up)) - 1
        var candidates: [Candidate] = []
        for bits in max(1, min(low, high) - 2)...min(64, max(low, high) + 4) {
            let buckets = pow(2, Double(bits))
            let inBand = buckets > distinct.squareRoot() && buckets < distinct / 2
            let multiplier = collision > 0 ? (collision + (1 - collision) / buckets) / collision : 1
            candidates.append(
                Candidate(bits: bits, anonymitySet: max(1, distinct / buckets), multiplier: multiplier, inBand: inBand))
        }
        self.candidates = candidates
        bitsForMultiplier1_5 = (1...64).first { bits in
            collision > 0 && (collision + (1 - collision) / pow(2, Double(bits))) / collision <= 1.5
        }
        warnings = []
        let band = candidates.filter(\.inBand)
        if indexable < 16 {
            refusal = "only \(indexable) rows have a value: too few to plan from (at least 16)"
            recommendedBits = nil
        } else if band.isEmpty {
            refusal =
                "about \(estimatedDistinct) distinct values is too few for a standalone blind index: every bucket would show which rows share a value; combine the field with another in a compound index (with: [...])"
            recommendedBits = nil
        } else {
            refusal = nil
            recommendedBits = band.last?.bits
        }
        if let recommendedBits, recommendedBits > StoreSchema.quietIndexBits {
            warnings.append(
                "\(recommendedBits) bits is more than \(StoreSchema.quietIndexBits): init and migrate refuse such an index unless the schema says why in \"acceptLeakage\""
            )
        }
        if let top = topShares.first, top > 0.25 {
            warnings.append(
                String(
                    format:
                        "the commonest value is in %.0f%% of rows: its bucket stands out at any length; consider a compound index",
                    top * 100))
        }
    }
}

extension RecordStore {
    /// Reads up to `sampleSize` rows of `tableName` at random (opening the
    /// field when sealed; clear values of a clear or migrating field as
    /// they are), applies `transforms` (those of the field's first index
    /// when nil), and plans an index on the result.
    public func plan(
        _ tableName: String, field fieldName: String, transforms: [IndexTransform]? = nil, sampleSize: Int = 100_000
    ) throws -> StorePlan {
        guard sampleSize > 0 else { throw CofferError(.invalidArgument, "a sample holds at least one row") }
        let (rows, state, sample, tenants) = try read { work in
            let (db, state) = (work.db, work.state)
            let table = try state.schema.table(tableName)
            guard table.field(fieldName) != nil else {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(fieldName)")
            }
            let rows = Int(try db.integer("SELECT count(*) FROM \(StoreSQL.quoted(table.name))") ?? 0)
            let order = rows > sampleSize ? " ORDER BY random()" : ""
            let sample = try db.rows("\(select(table))\(order) LIMIT \(sampleSize)")
            return (rows, state, sample, try state.tenantKeys(of: sample, table: table, db))
        }
        let table = try state.schema.table(tableName)
        let field = table.field(fieldName)!
        let steps = transforms ?? field.indexes.first?.transforms ?? []
        let texts = try Self.parallelMap(sample) { row -> [String]? in
            let record = try state.record(from: row, table: table, nil, resolved: tenants)
            return StoreKeys.indexInput([record[fieldName] ?? .null], transforms: steps)
        }
        var counts: [[String]: Int] = [:]
        for case let text? in texts { counts[text, default: 0] += 1 }
        var plan = StorePlan(counts: Array(counts.values), sampled: sample.count, rows: rows)
        if !field.indexes.isEmpty {
            plan.warnings.append(
                "\(tableName).\(fieldName) has an index already (\(field.indexes.map(\.name).joined(separator: ", "))): a second one would leak jointly with it, and init and migrate refuse one unless the schema says why in \"acceptLeakage\""
            )
        }
        if let tenant = table.tenant {
            plan.notes.append(
                "\(tableName) is kept per tenant (\(tenant)): each tenant's index values are under keys of its own, so a value stored to probe the index (chosen insertion) matches only rows of the same tenant; the figures are over every tenant's rows together, and one tenant's buckets hold fewer values"
            )
        }
        return plan
    }
}
