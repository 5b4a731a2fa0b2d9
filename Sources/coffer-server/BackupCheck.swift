#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import Foundation

/// `backup verify`: a backup is checked by opening it, never by trusting
/// it. Every file must have the digest the manifest gives; the KEK ring
/// must open under the root (a wrong root exits 77, a changed ring 65);
/// an SQLite copy is opened, from a scratch copy so the backup is never
/// written, as a key store: every KEK key its stored keys and server
/// secrets name must be in the ring, and its audit chain must be intact.
/// A PostgreSQL dump must be read by `pg_restore` with every table in it.
struct BackupCheck {
    let folder: String
    let secret: UnlockSecret

    func run() async throws -> String {
        let manifest = try readManifest()
        let files = manifest["files"] as? [String: String] ?? [:]
        for (name, digest) in files.sorted(by: { $0.key < $1.key }) {
            let path = folder + "/" + name
            guard FileManager.default.fileExists(atPath: path) else {
                throw CofferError(.stateAuthenticationFailed, "the backup has lost \(name)")
            }
            guard try BackupFolder.digest(path) == digest else {
                throw CofferError(.stateAuthenticationFailed, "\(name) was changed after the backup was made")
            }
        }
        let sqlite = manifest["database"] as? String == "sqlite"
        let ringInFile = manifest["ring"] as? String == "file"
        guard files[sqlite ? BackupFolder.sqlite : BackupFolder.dump] != nil, !ringInFile || files["kek.ckr"] != nil
        else {
            throw CofferError(
                .stateAuthenticationFailed, "\(folder)/\(BackupFolder.manifest) does not name the backup's files")
        }
        if sqlite { return try await checkSQLite(ringInFile: ringInFile) }
        let dump = folder + "/" + BackupFolder.dump
        let tables = try PostgresTools.tables(in: dump)
        let missing = PostgresTools.serverTables.subtracting(tables)
        guard missing.isEmpty else {
            throw CofferError(.stateAuthenticationFailed, "the dump lacks \(missing.sorted().joined(separator: ", "))")
        }
        let ring = try openRing(
            ringInFile
                ? try Data(contentsOf: URL(fileURLWithPath: folder + "/kek.ckr")) : try PostgresTools.kekRing(dump))
        return "verified: \(describe(ring)); \(BackupFolder.dump) is read by pg_restore, with every table"
    }

    /// `backup.json`, read strictly: the members `writeManifest` writes
    /// and no others, a database and a ring place it knows, and files
    /// among the backup's own names, each with a SHA-256 in hex.
    private func readManifest() throws -> [String: Any] {
        let path = folder + "/" + BackupFolder.manifest
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(folder) is not a backup: it has no \(BackupFolder.manifest)")
        }
        let names: Set = [BackupFolder.sqlite, BackupFolder.dump, "kek.ckr"]
        guard let manifest = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any],
            Set(manifest.keys) == ["format", "made", "version", "database", "ring", "files"],
            manifest["format"] as? Int == 1, manifest["made"] is String, manifest["version"] is String,
            ["sqlite", "postgresql"].contains(manifest["database"] as? String ?? ""),
            ["file", "database"].contains(manifest["ring"] as? String ?? ""),
            let files = manifest["files"] as? [String: Any],
            files.allSatisfy({ names.contains($0.key) && Self.isDigest($0.value) })
        else {
            // Part of the backup, changed (exit 65 as for its files), or another version's.
            throw CofferError(.stateAuthenticationFailed, "\(path) is not a backup manifest this version reads")
        }
        return manifest
    }

    static func isDigest(_ value: Any) -> Bool {
        guard let text = value as? String, text.utf8.count == 64 else { return false }
        return Hex.decode(text) != nil && text == text.lowercased()
    }

    private func openRing(_ bytes: Data) throws -> KeyRingFile {
        do {
            return try KeyRingFile(contents: bytes, secret: secret)
        } catch let error as CofferError {
            throw error.prefixed("the backup's KEK ring")
        }
    }

    private func describe(_ ring: KeyRingFile) -> String {
        let disabled = ring.keyRing.keys.filter { $0.state == .disabled }.count
        let count = ring.keyRing.keys.count
        return "the KEK ring opens (\(count) KEK key\(count == 1 ? "" : "s"), \(disabled) disabled)"
    }

    private func checkSQLite(ringInFile: Bool) async throws -> String {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-backup-check-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(
            atPath: scratch, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try BackupFolder.copy(folder + "/" + BackupFolder.sqlite, to: scratch + "/keys.sqlite")
        let store = try ServerKeyStore(path: scratch + "/keys.sqlite", kek: KeyRing(), creating: false)
        do {
            let bytes =
                ringInFile
                ? try Data(contentsOf: URL(fileURLWithPath: folder + "/kek.ckr")) : try await store.storedKEKRing()
            guard let bytes else { throw CofferError(.stateAuthenticationFailed, "the backup holds no KEK ring") }
            let ring = try openRing(bytes)
            store.useKEK(ring.keyRing, reload: nil)
            let usage = try await store.rowsByKEKKey()
            let known = Set(ring.keyRing.keys.map(\.id))
            let named = Set(usage.keys.keys).union(usage.secrets.keys)
            if let absent = named.subtracting(known).min() {
                throw CofferError(
                    .keyNotFound,
                    "the database copy has rows sealed under KEK key \(String(format: "%08x", absent)), which the backup's ring does not hold"
                )
            }
            let audit = try await store.verifyAudit()
            if let broken = audit.broken {
                throw CofferError(
                    .stateAuthenticationFailed,
                    "the copy's audit chain is broken at entry \(broken.seq): \(broken.reason)")
            }
            await store.close()
            let stored = usage.keys.values.reduce(0, +)
            return
                "verified: \(describe(ring)); \(BackupFolder.sqlite) opens with \(stored) stored keys, every one under a KEK key in the ring, and an intact audit chain of \(audit.checked) entries"
        } catch {
            await store.close()
            throw error
        }
    }
}
#endif
