import CofferKeyClient
import Foundation
import PresentsModel

// The list from a terminal, as the app's screen shows it:
//
//   presents --db presents.sqlite --password-file pw add Grandma "a knitted scarf"
//   presents --db presents.sqlite --password-file pw list
//   presents --db presents.sqlite --password-file pw for Grandma
//   presents --db presents.sqlite --password-file pw remove 1
//   presents --db presents.sqlite --server https://keys.example.com --token-file id.jwt list
//   presents --db presents.sqlite --password-file pw --aerogear-password-file old-pw import-aerogear xmas defaults.plist
//
// Exit status 0, 1 for a failure (said on standard error), 64 for bad usage.

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("presents: \(message)\n".utf8))
    exit(status)
}

let usage = """
    usage: presents --db FILE (--password-file F | --server URL --token-file F) \
    (list | for NAME | add NAME WHAT | remove ID | import-aerogear STORE DEFAULTS)
    """
var options: [String: String] = [:]
var words: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument.hasPrefix("--") {
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value\n\(usage)", status: 64) }
        options[String(argument.dropFirst(2))] = value
    } else {
        words.append(argument)
    }
}
guard let db = options["db"], let command = words.first else { fail(usage, status: 64) }

func firstLine(_ path: String) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("cannot read \(path)", status: 1) }
    return String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
}

let unlock: PresentsStore.Unlock
if let file = options["password-file"] {
    unlock = .password(firstLine(file))
} else if let server = options["server"].flatMap(URL.init(string:)), let tokenFile = options["token-file"] {
    let token = firstLine(tokenFile)
    do {
        unlock = .server(try KeyServerClient(server: server, account: "presents", token: { token }))
    } catch { fail("\(error)", status: 1) }
} else {
    fail(usage, status: 64)
}

do {
    let presents = try await PresentsStore.open(at: URL(fileURLWithPath: db), unlock: unlock)
    switch (command, words.count) {
    case ("list", 1):
        for present in try await presents.all() {
            print("\(present.id ?? 0)\t\(present.toWhom)\t\(present.description)")
        }
    case ("for", 2):
        for present in try await presents.presents(for: words[1]) {
            print("\(present.id ?? 0)\t\(present.description)")
        }
    case ("add", 3):
        let added = try await presents.add(toWhom: words[1], description: words[2])
        print(added.id ?? 0)
    case ("import-aerogear", 3):
        guard let passwordFile = options["aerogear-password-file"] else {
            fail("import-aerogear needs --aerogear-password-file (the old app's password)", status: 64)
        }
        let moved = try await presents.importAeroGear(
            store: try Data(contentsOf: URL(fileURLWithPath: words[1])),
            defaults: try Data(contentsOf: URL(fileURLWithPath: words[2])), password: firstLine(passwordFile))
        print("moved \(moved.count) presents from the AeroGear Xmas app")
    case ("remove", 2):
        guard let id = Int64(words[1]) else { fail("an id is a whole number", status: 64) }
        guard try await presents.remove(id: id) else { fail("no present \(id)", status: 1) }
    default:
        fail(usage, status: 64)
    }
} catch {
    fail("\(error)", status: 1)
}
