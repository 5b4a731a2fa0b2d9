import ArgumentParser
import Coffer
import CofferStore
import Foundation

/// `coffer store shred-tenant`: one tenant's keys destroyed and its
/// records deleted (docs/store.md, "Tenants").
struct StoreShredTenant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shred-tenant",
        abstract: "Destroy one tenant's keys and delete its records: none of its cells opens again.",
        discussion: """
            The table must name a tenant field in the schema ("tenant": "org"). The tenant's keys are replaced by \
            a sealed tombstone, so no write for it is taken afterwards; every other tenant is untouched. A backup \
            taken before holds the tenant's keys sealed under the store's key ring, and the ring opens them — \
            unless the table keeps its tenants' keys at a holder ("tenantKeys": "holder", --tenant-keys-server): \
            the tenant is then shredded there first, and no backup opens its cells either. See docs/store.md, \
            "Tenants", for what a shred reaches.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table kept per tenant.") var table: String
    @Option(help: "The tenant: its tenant field's value.") var tenant: String
    @Flag(help: "Keep the tenant's records (their sealed cells never open again).") var keepRecords = false

    func run() async throws {
        let opened = try await store.open(kek)
        let table = try opened.schema.table(table)
        guard let name = table.tenant, let field = table.field(name) else {
            throw CLIFailure("\(table.name) is not kept per tenant: its schema names no tenant field", status: 64)
        }
        let value = try RecordJSON.value(argument: tenant, field: field, table: table.name)
        let shred = try opened.shredTenant(table.name, tenant: value, keepRecords: keepRecords)
        print(
            "shredded tenant \(tenant) of \(table.name): "
                + (shred.destroyedKeys ? "its keys destroyed" : "it had no keys; none will be made")
                + (keepRecords ? ", its records kept" : ", \(shred.recordsDeleted) records deleted")
                + (shred.destroyedAtHolder ? "; its key destroyed at the holder, so no backup opens its cells" : ""))
        if !shred.logCleared {
            StandardError.write(
                "coffer: warning: readers held the write-ahead log, which may still hold the tenant's keys until the next write empties it\n"
            )
        }
    }
}
