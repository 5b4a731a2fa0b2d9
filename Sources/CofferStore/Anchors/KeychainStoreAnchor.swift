import Coffer
import CofferKeychain
import Foundation

/// Anchors kept as generic-password items in a keychain (service
/// `org.coffer.store-anchor`, the store id as account, the state's JSON
/// as data): on a device, beside the store's rollback mark, out of reach
/// of a backup of the app's container (by default readable after the
/// first unlock, on this device only). A keychain has no lock across
/// processes, so two processes publishing at once may leave the older of
/// their two states: the anchor then lags the database, which delays a
/// detection and never makes a false one.
public struct KeychainStoreAnchor: StoreAnchor {
    public static let service = "org.coffer.store-anchor"
    public let keychain: any Keychain
    public let accessibility: Accessibility

    public init(keychain: any Keychain, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly) {
        self.keychain = keychain
        self.accessibility = accessibility
    }

    public var location: String { "the keychain (\(Self.service))" }

    public func anchoredState(store storeID: String) throws -> StoreAnchorState? {
        do {
            let bytes = try keychain.copyData(.password(service: Self.service, account: storeID)).revealed()
            return try StoreAnchorState(json: Data(bytes))
        } catch let error as KeychainError where error.code == .itemNotFound {
            return nil
        }
    }

    @discardableResult
    public func publish(_ state: StoreAnchorState, store storeID: String) throws -> StoreAnchorState {
        let anchored = try anchoredState(store: storeID)
        if let anchored {
            switch state.compared(to: anchored) {
            case .same, .older: return anchored
            case .forked: throw StoreAnchors.forked(state, anchored, at: location)
            case .newer: break
            }
        }
        try write(state, replacing: anchored != nil, store: storeID)
        return state
    }

    public func accept(_ state: StoreAnchorState, store storeID: String) throws {
        try write(state, replacing: try anchoredState(store: storeID) != nil, store: storeID)
    }

    private func write(_ state: StoreAnchorState, replacing: Bool, store storeID: String) throws {
        let data = SecretBytes(Array(try state.json()))
        if !replacing {
            do {
                try keychain.add(
                    .password(
                        service: Self.service, account: storeID, label: "Coffer store anchor",
                        accessibility: accessibility),
                    data: data)
                return
            } catch let error as KeychainError where error.code == .duplicateItem {}
        }
        try keychain.update(.password(service: Self.service, account: storeID), data: data)
    }
}
