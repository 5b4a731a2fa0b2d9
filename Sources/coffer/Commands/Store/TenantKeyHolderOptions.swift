import ArgumentParser
import Coffer
import CofferKeyClient
import CofferStore
import Foundation

/// Where the keys of tables whose tenants' keys are held outside the
/// database come from (docs/store.md, "Tenants"): a coffer-server, with an
/// operator token of scope `keys:release` (and `subjects:shred` for
/// `shred-tenant`).
struct TenantKeyHolderOptions: ParsableArguments {
    @Option(
        name: .customLong("tenant-keys-server"),
        help: ArgumentHelp(
            "The coffer-server holding the tenants' keys of tables that keep them outside the database (else COFFER_TENANT_KEYS_SERVER).",
            valueName: "URL"))
    var server: String?

    @Option(
        name: .customLong("tenant-keys-token-file"),
        help: ArgumentHelp(
            "The operator token (scope keys:release; subjects:shred too for shred-tenant), from this file (else COFFER_TENANT_KEYS_TOKEN_FILE).",
            valueName: "FILE"))
    var tokenFile: String?

    @Option(
        name: .customLong("tenant-keys-ca-file"),
        help: ArgumentHelp(
            "Trust that server's certificate only when this CA (PEM) issued it (else COFFER_TENANT_KEYS_CA_FILE).",
            valueName: "FILE"))
    var caFile: String?

    @Option(
        name: .customLong("tenant-keys-purpose"),
        help: ArgumentHelp(
            "The purpose the tenants' keys have at that server (default: \(KeyServerTenantKeyHolder.defaultPurpose)).",
            valueName: "PURPOSE"))
    var purpose: String?

    /// The holder the options name, or nil when they name none.
    func holder() throws -> (any TenantKeyHolder)? {
        let environment = ProcessInfo.processInfo.environment
        func named(_ value: String?, _ variable: String) -> String? {
            value ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let server = named(server, "COFFER_TENANT_KEYS_SERVER")
        let tokenFile = named(tokenFile, "COFFER_TENANT_KEYS_TOKEN_FILE")
        let caFile = named(caFile, "COFFER_TENANT_KEYS_CA_FILE")
        guard let server else {
            for (value, option) in [
                (tokenFile, "--tenant-keys-token-file"), (caFile, "--tenant-keys-ca-file"),
                (purpose, "--tenant-keys-purpose"),
            ] where value != nil {
                throw ValidationError("\(option) is for --tenant-keys-server")
            }
            return nil
        }
        guard let tokenFile else {
            throw ValidationError(
                "--tenant-keys-server needs --tenant-keys-token-file (an operator token of scope keys:release)")
        }
        guard let url = URL(string: server), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw ValidationError("--tenant-keys-server takes the key server's URL (https://HOST[:PORT])")
        }
        let token = String(
            decoding: try Input.readAll(path: tokenFile, what: "the tenant keys token file", secret: true),
            as: UTF8.self
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        return try KeyServerTenantKeyHolder(
            server: url, operatorToken: token, purpose: purpose ?? KeyServerTenantKeyHolder.defaultPurpose,
            transport: try ServerTrust.transport(caFile: caFile, option: "--tenant-keys-ca-file"))
    }

    /// `store` with the holder in place, when one is named.
    func hold(_ store: RecordStore) throws -> RecordStore {
        if let holder = try holder() { store.holdTenantKeys(at: holder) }
        return store
    }
}
