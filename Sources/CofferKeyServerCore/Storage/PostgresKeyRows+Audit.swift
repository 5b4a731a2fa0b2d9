#if Server
import Foundation
import PostgresNIO

// The audit chain on PostgreSQL. An append is one call of a function the
// schema holds (`coffer_audit_append`): it takes one advisory lock, reads
// the chain's head only once it holds it (READ COMMITTED: that statement
// sees every append committed before), links and inserts the entries,
// and the lock is let go when the transaction commits. So the chain never
// forks. Releases call it inside `coffer_release`, one statement that is
// its own transaction, so the lock is held for the append and its commit
// only, all inside the database. Other changes (rarer: first uses,
// rotations, shreds, operators) call it inside their own transaction,
// which holds the lock until it commits.
extension PostgresKeyRows {
    func appendAudit(_ records: [AuditEntry.Record], now: Int64) async throws {
        let links = try await auditLinks.key()
        return try await database.transaction { db in try await Self.append(db, records, now: now, links: links) }
    }

    static let auditLock: Int64 = 7_365_487_310_561_385

    /// The audit function of schema version 5. `tails` are the entries'
    /// encodings after their number (``AuditEntry/encodeTail(at:_:)``);
    /// the function adds the label and the number it gives each entry and
    /// hashes as ``AuditEntry/chained(after:under:)`` does, so `audit
    /// verify`, which checks every link in Swift from the stored fields,
    /// also checks that the tails matched them.
    static let auditFunction = auditFunction(keyed: false)

    /// The audit function of schema version 12, which keys the links
    /// (``AuditLinkKey``): it is handed the batch's nonce, stored in each
    /// entry, and the batch key's two HMAC pads, with which it computes
    /// HMAC-SHA-256 as SHA-256(outer ‖ SHA-256(inner ‖ message)) (RFC
    /// 2104); the pads are used for this statement and stored nowhere.
    static let keyedAuditFunction = auditFunction(keyed: true)

    static func auditFunction(keyed: Bool) -> String {
        let link =
            keyed
            ? "sha256(outer_pad || sha256(inner_pad || head_hash || label || int4send(octet_length(number)) || convert_to(number, 'UTF8') || tails[i]))"
            : "sha256(head_hash || label || int4send(octet_length(number)) || convert_to(number, 'UTF8') || tails[i])"
        let check =
            keyed
            ? "\n  IF octet_length(nonce) <> 16 OR octet_length(inner_pad) <> 64 OR octet_length(outer_pad) <> 64 THEN"
                + "\n    RAISE EXCEPTION 'coffer_audit_append_keyed: a nonce of 16 bytes and pads of 64 bytes';"
                + "\n  END IF;" : ""
        return """
            CREATE FUNCTION coffer_audit_append\(keyed ? "_keyed" : "")(entry_at bigint, actors text[], actions text[],
              realms text[], subjects text[], devices text[], purposes text[], versions bigint[], details text[],
              tails bytea[]\(keyed ? ", nonce bytea, inner_pad bytea, outer_pad bytea" : ""))
            RETURNS bigint LANGUAGE plpgsql AS $$
            DECLARE
              head_seq bigint;
              head_hash bytea;
              number text;
              seqs bigint[] := '{}';
              hashes bytea[] := '{}';
              n integer := coalesce(cardinality(tails), 0);
              label constant bytea := int4send(15) || convert_to('coffer audit v\(keyed ? 2 : 1)', 'UTF8');
            BEGIN
              IF n = 0 THEN RETURN 0; END IF;
              IF coalesce(cardinality(actors), 0) <> n OR coalesce(cardinality(actions), 0) <> n
                OR coalesce(cardinality(realms), 0) <> n OR coalesce(cardinality(subjects), 0) <> n
                OR coalesce(cardinality(devices), 0) <> n OR coalesce(cardinality(purposes), 0) <> n
                OR coalesce(cardinality(versions), 0) <> n OR coalesce(cardinality(details), 0) <> n THEN
                RAISE EXCEPTION 'coffer_audit_append: arrays of different lengths';
              END IF;\(check)
              PERFORM pg_advisory_xact_lock(\(auditLock));
              SELECT a.seq, a.hash INTO head_seq, head_hash FROM audit a ORDER BY a.seq DESC LIMIT 1;
              IF NOT FOUND THEN
                head_seq := 0;
                head_hash := decode(repeat('00', 32), 'hex');
              END IF;
              FOR i IN 1 .. n LOOP
                head_seq := head_seq + 1;
                number := head_seq::text;
                head_hash := \(link);
                seqs[i] := head_seq;
                hashes[i] := head_hash;
              END LOOP;
              INSERT INTO audit (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash\(keyed ? ", link" : ""))
              SELECT u.seq, entry_at, u.actor, u.action, u.realm, u.subject, u.device, u.purpose, u.version, u.detail,
                u.hash\(keyed ? ", nonce" : "")
              FROM unnest(seqs, actors, actions, realms, subjects, devices, purposes, versions, details, hashes)
                AS u (seq, actor, action, realm, subject, device, purpose, version, detail, hash);
              RETURN head_seq;
            END $$
            """
    }

    /// Appends `records` at `now`, in `db`'s transaction (or, outside one,
    /// as a transaction of its own), in one round trip.
    static func append(
        _ db: PostgresConnection, _ records: [AuditEntry.Record], now: Int64, links: AuditLinkKey
    ) async throws {
        guard !records.isEmpty else { return }
        let tails = records.map { ByteBuffer(bytes: AuditEntry.encodeTail(at: now, $0)) }
        let batch = links.batch()
        let (inner, outer) = batch.pads
        try await db.run(
            """
            SELECT coffer_audit_append_keyed(\(now), \(records.map(\.actor))::text[], \(records.map(\.action))::text[],
              \(records.map(\.realm))::text[], \(records.map(\.subject))::text[], \(records.map(\.device))::text[],
              \(records.map(\.purpose))::text[], \(records.map(\.version))::bigint[], \(records.map(\.detail))::text[],
              \(tails)::bytea[], \(batch.nonce), \(inner), \(outer))
            """)
    }

    func auditEntries(after seq: Int64, limit: Int) async throws -> [AuditEntry] {
        try await database.query(
            "SELECT \(unescaped: Self.auditColumns) FROM audit WHERE seq > \(seq) ORDER BY seq LIMIT \(limit)",
            Self.entries)
    }

    func auditEntries(realm: String, subject: String) async throws -> [AuditEntry] {
        try await database.query(
            "SELECT \(unescaped: Self.auditColumns) FROM audit WHERE realm = \(realm) AND subject = \(subject) ORDER BY seq",
            Self.entries)
    }

    static let auditColumns = "seq, at, actor, action, realm, subject, device, purpose, version, detail, hash, link"

    @Sendable static func entries(_ rows: PostgresRowSequence) async throws -> [AuditEntry] {
        var entries: [AuditEntry] = []
        for try await (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash, link)
            in rows.decode(
                (Int64, Int64, String, String, String, String, String, String, Int64, String, Data, Data).self)
        {
            entries.append(
                AuditEntry(
                    seq: seq, at: at, actor: actor, action: action, realm: realm, subject: subject, device: device,
                    purpose: purpose, version: version, detail: detail, hash: hash, link: link))
        }
        return entries
    }

    func auditHead() async throws -> AuditHead? {
        try await database.query("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1") { rows in
            var head: AuditHead?
            for try await (seq, hash) in rows.decode((Int64, Data).self) { head = AuditHead(seq: seq, hash: hash) }
            return head
        }
    }

    func addAuditAnchor(_ anchor: AuditAnchor) async throws {
        try await database.query(
            """
            INSERT INTO audit_anchors (seq, hash, at, mac) VALUES (\(anchor.seq), \(anchor.hash), \(anchor.at),
              \(anchor.mac)) ON CONFLICT DO NOTHING
            """
        ) { _ in () }
    }

    func lastAuditAnchor() async throws -> AuditAnchor? {
        try await database.query("SELECT seq, hash, at, mac FROM audit_anchors ORDER BY seq DESC LIMIT 1") { rows in
            var anchor: AuditAnchor?
            for try await (seq, hash, at, mac) in rows.decode((Int64, Data, Int64, Data).self) {
                anchor = AuditAnchor(seq: seq, hash: hash, at: at, mac: mac)
            }
            return anchor
        }
    }

    func auditAnchors(after seq: Int64, limit: Int) async throws -> [AuditAnchor] {
        try await database.query(
            "SELECT seq, hash, at, mac FROM audit_anchors WHERE seq > \(seq) ORDER BY seq LIMIT \(limit)"
        ) { rows in
            var anchors: [AuditAnchor] = []
            for try await (seq, hash, at, mac) in rows.decode((Int64, Data, Int64, Data).self) {
                anchors.append(AuditAnchor(seq: seq, hash: hash, at: at, mac: mac))
            }
            return anchors
        }
    }
}
#endif
