#if canImport(SwiftUI)
import SwiftUI

/// The seed's list screen: presents by recipient, a field for a new one.
/// The descriptions are opened only in memory; the file keeps them sealed.
@available(iOS 18, macOS 15, *)
public struct PresentsView: View {
    let store: PresentsStore
    @State private var presents: [Present] = []
    @State private var toWhom = ""
    @State private var what = ""
    @State private var failure: String?

    public init(store: PresentsStore) { self.store = store }

    public var body: some View {
        NavigationStack {
            List {
                Section("New present") {
                    TextField("For whom", text: $toWhom)
                    TextField("What", text: $what)
                    Button("Add") { Task { await add() } }
                        .disabled(toWhom.isEmpty || what.isEmpty)
                }
                ForEach(Dictionary(grouping: presents, by: \.toWhom).sorted { $0.key < $1.key }, id: \.key) { group in
                    Section(group.key) {
                        ForEach(group.value) { present in Text(present.description) }
                            .onDelete { offsets in Task { await remove(offsets.map { group.value[$0] }) } }
                    }
                }
            }
            .navigationTitle("Presents")
            .task { await follow() }
            .alert(
                "Presents", isPresented: .constant(failure != nil),
                actions: { Button("OK") { failure = nil } }, message: { Text(failure ?? "") })
        }
    }

    /// The list as the store has it, now and after every change: this
    /// screen's, a share extension's or a widget's (the task ends with the view).
    private func follow() async {
        do {
            for try await list in store.changes() { presents = list }
        } catch { failure = "\(error)" }
    }

    private func add() async {
        do {
            try await store.add(toWhom: toWhom, description: what)
            (toWhom, what) = ("", "")
        } catch { failure = "\(error)" }
    }

    private func remove(_ gone: [Present]) async {
        do {
            for present in gone { try await store.remove(present) }
        } catch { failure = "\(error)" }
    }
}
#endif
