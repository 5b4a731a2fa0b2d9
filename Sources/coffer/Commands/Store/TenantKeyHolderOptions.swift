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
        guard
            let server = try OperatorServer.named(
                "tenant-keys", variable: "TENANT_KEYS", scope: "keys:release", server: server, tokenFile: tokenFile,
                caFile: caFile, others: [(purpose, "--tenant-keys-purpose")])
        else { return nil }
        return try KeyServerTenantKeyHolder(
            server: server.url, operatorToken: server.token,
            purpose: purpose ?? KeyServerTenantKeyHolder.defaultPurpose, transport: server.transport)
    }

    /// `store` with the holder in place, when one is named.
    func hold(_ store: RecordStore) throws -> RecordStore {
        if let holder = try holder() { store.holdTenantKeys(at: holder) }
        return store
    }
}
