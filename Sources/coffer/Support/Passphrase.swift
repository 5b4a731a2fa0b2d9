import Coffer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Passphrases never come from argv: from a file (a path or /dev/fd/N),
/// or from the terminal with echo off.
enum Passphrase {
    /// The passphrase in `path`: its bytes without one final line break.
    static func read(file path: String) throws -> [UInt8] {
        var bytes = try Input.readAll(path: path, what: "the passphrase file")
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard !bytes.isEmpty else {
            throw CLIFailure("the passphrase file \(path) is empty", status: 64)
        }
        announceStretching()
        return bytes
    }

    /// A passphrase is stretched next (scrypt or PBKDF2: seconds, more in
    /// a debug build): on a terminal, say so, so that the wait is not
    /// taken for a hang. Nothing is written to a pipe or a file.
    static func announceStretching() {
        guard isatty(STDERR_FILENO) == 1 else { return }
        StandardError.write("coffer: stretching the passphrase (scrypt or PBKDF2); this takes a few seconds…\n")
    }

    /// Asks on the controlling terminal; `confirm` asks twice.
    static func prompt(_ question: String, confirm: Bool) throws -> [UInt8] {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else {
            throw CLIFailure(
                "a passphrase is needed but there is no terminal to ask on",
                hint: "pass it with --passphrase-file FILE (a path or /dev/fd/N)", status: 64)
        }
        defer { close(tty) }
        let first = try ask(tty, question)
        if confirm {
            let second = try ask(tty, "Confirm passphrase: ")
            guard first == second else { throw CLIFailure("the passphrases do not match", status: 64) }
        }
        guard !first.isEmpty else { throw CLIFailure("the passphrase is empty", status: 64) }
        announceStretching()
        return first
    }

    private static func ask(_ tty: Int32, _ question: String) throws -> [UInt8] {
        FileHandle(fileDescriptor: tty).write(Data(question.utf8))
        var saved = termios()
        tcgetattr(tty, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        // Ctrl-C, Ctrl-\\ or a kill while echo is off must not leave the terminal mute.
        promptTerminal = tty
        promptSaved = saved
        let signals = [SIGINT, SIGTERM, SIGQUIT, SIGHUP]
        var previous: [sigaction] = []
        for number in signals {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = restoreEchoAndDie
            #else
            action.__sigaction_u.__sa_handler = restoreEchoAndDie
            #endif
            sigemptyset(&action.sa_mask)
            var old = sigaction()
            sigaction(number, &action, &old)
            previous.append(old)
        }
        // Deliver them even if the parent left them blocked.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in signals { sigaddset(&unblock, number) }
        var previousMask = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &unblock, &previousMask)
        tcsetattr(tty, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(tty, TCSAFLUSH, &saved)
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
            for (number, old) in zip(signals, previous) {
                var old = old
                sigaction(number, &old, nil)
            }
            promptTerminal = -1
            FileHandle(fileDescriptor: tty).write(Data("\n".utf8))
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while readByte(tty, &byte) == 1, byte != 0x0A {
            line.append(byte)
            guard line.count <= 4096 else { throw CLIFailure("the passphrase is longer than 4096 bytes") }
        }
        if line.last == 0x0D { line.removeLast() }
        return line
    }
}

/// A passphrase identity that asks for the passphrase only when the file
/// turns out to be passphrase-encrypted, like age does.
struct LazyPassphraseIdentity: Identity {
    let file: String?

    func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
        guard stanzas.contains(where: { $0.type == "scrypt" }) else { return nil }
        let passphrase = try file.map(Passphrase.read(file:)) ?? Passphrase.prompt("Enter passphrase: ", confirm: false)
        return try Scrypt.Identity(passphrase: passphrase).unwrap(stanzas)
    }
}

/// The terminal whose echo a prompt turned off, and its settings before:
/// read only by the signal handler below, set only around a prompt.
nonisolated(unsafe) private var promptTerminal: Int32 = -1
nonisolated(unsafe) private var promptSaved = termios()

/// Restores the terminal's echo, then dies of the same signal (the
/// default action), so the shell sees what it expects.
private func restoreEchoAndDie(_ number: Int32) {
    if promptTerminal >= 0 {
        tcsetattr(promptTerminal, TCSANOW, &promptSaved)
        _ = write(promptTerminal, "\n", 1)
    }
    signal(number, SIG_DFL)
    raise(number)
}

/// At file scope so that `read` is the system call, not a member.
private func readByte(_ descriptor: Int32, _ byte: inout UInt8) -> Int {
    read(descriptor, &byte, 1)
}
