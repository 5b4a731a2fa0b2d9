import Coffer
import CofferCompat
import CofferStore
import Foundation

extension PresentsStore {
    /// Moves the presents the old AeroGear "Xmas" app kept on this phone
    /// into this store, once, in one transaction, and returns them with
    /// their new ids. `store` is the app's `Documents/xmas`, `defaults` its
    /// NSUserDefaults property list (or `UserDefaults.standard`'s values,
    /// re-encoded), `password` what the user typed in the old app.
    ///
    /// A wrong password, or one description that does not open, is a
    /// `CofferError` naming the present, and nothing is added. Delete the
    /// old files, and `xmas.salt` and `xmas.IV`/`xmas.nonce` from the
    /// defaults, only after this returns.
    ///
    /// ```swift
    /// let old = documents.appendingPathComponent("xmas")
    /// if FileManager.default.fileExists(atPath: old.path) {
    ///     let defaults = try PropertyListSerialization.data(
    ///         fromPropertyList: UserDefaults.standard.dictionaryRepresentation(), format: .binary, options: 0)
    ///     try await presents.importAeroGear(store: try Data(contentsOf: old), defaults: defaults, password: typed)
    ///     try FileManager.default.removeItem(at: old)
    /// }
    /// ```
    @discardableResult
    public func importAeroGear(store: Data, defaults: Data, prefix: String = "xmas", password: String) async throws
        -> [Present]
    {
        let old = try AeroGear.PropertyListStore(propertyList: store)
        let parameters = try AeroGear.Parameters(defaults: defaults, prefix: prefix)
        // PBKDF2 and the opening run off the caller's (main) thread.
        let opened = try await Task.detached {
            try AeroGear.open(old, parameters: parameters, password: password)
        }.value
        let presents = try opened.map { record in
            guard case .text(let toWhom)? = record.fields["toWhom"],
                case .data(let description)? = record.fields["description"],
                let text = String(data: description, encoding: .utf8)
            else {
                throw CofferError(.malformed, "\(record.name) is not a present: toWhom text and a description")
            }
            // The old UUID is not kept: the store gives each present a new id.
            return Present(toWhom: toWhom, description: text)
        }
        return try await self.store.put(contentsOf: presents)
    }
}
