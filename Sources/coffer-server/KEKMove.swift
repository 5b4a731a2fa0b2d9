#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import Foundation

extension KEK {
    /// `DIR/kek.ckr` into the database every replica reads.
    struct MoveToDatabase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "move-to-database",
            abstract: "Moves DIR/kek.ckr into the database, where every replica reads it, and removes the file.",
            discussion: """
                Afterwards a kek rotate (or enable, reseal) on any replica reaches the others at their next \
                reading of the ring (every 30 s, and at once when a row names a key they lack), with no file to \
                copy. Remove kek.ckr from every other replica's DIR and restart it: a server refuses to start \
                with a ring in both places. Killed at any point, running it again finishes the move (or says it \
                is done). The ring's rollback mark carries over: an older copy put back in the database is \
                refused by every replica that saw a newer one.
                """)
        @OptionGroup var data: DataOptions

        func run() async throws {
            let settings = try await data.settings()
            let file = try data.kekRingFile(settings)
            let store = try await data.openDatabase(settings, creating: false)
            do {
                try await move(file, KEKRingRow(store: store, secret: file.secret, rollbackGuard: file.rollbackGuard))
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        }

        func move(_ file: KeyRingStore, _ row: KEKRingRow) async throws {
            let say: (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
            let onDisk = FileManager.default.fileExists(atPath: file.path) ? try await file.read() : nil
            if try await row.exists() {
                let kept = try await row.read()
                guard let onDisk else {
                    say("the database keeps the KEK ring already (generation \(kept.generation)): nothing to do")
                    return
                }
                guard onDisk.ringID == kept.ringID, onDisk.generation <= kept.generation else {
                    throw ValidationError(
                        "the database keeps another KEK ring, or an older generation of this one, than \(file.path): nothing changed; compare them with kek list before removing either"
                    )
                }
            } else {
                guard let onDisk else {
                    throw ValidationError("there is no KEK ring at \(file.path) nor in the database")
                }
                try await row.create(onDisk)
                _ = try await row.read()
            }
            try FileManager.default.removeItem(atPath: file.path)
            say(
                "moved \(file.path) into the database; remove kek.ckr from every other replica's DIR and restart it")
        }
    }
}
#endif
