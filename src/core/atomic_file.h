// The one way gpuvs writes a file: run files, compare and claims outputs, HTML
// reports, the monitor's timeline and Prometheus files, the collectives rendezvous
// file. A reader, a crash or a kill at any moment sees either the old file or the
// complete new one: never an empty, truncated or mixed file.
//
// write_file_atomically(path, content):
//  1. refuses a `path` that is a symbolic link (lstat: the link's target is never
//     written, whatever it is), a directory ("Is a directory") or anything else that
//     is not a regular file (a FIFO, a device); a missing folder is named, not made;
//  2. creates a temporary file in the folder of `path`, named
//     ".<name>.gpuvs-tmp.<pid>.<16 hex digits>" (<name> is the file name of `path`,
//     its first 200 bytes when longer), with O_CREAT | O_EXCL | O_CLOEXEC and mode
//     0644, less the umask; a name that is taken is retried with other digits;
//  3. writes all of `content` (short writes and EINTR are retried), fsyncs and closes
//     it, checking each step;
//  4. renames it over `path` (atomic on POSIX file systems), then fsyncs the folder so
//     that the rename survives a crash. A failure of that last fsync is not reported:
//     the new content is in place and nothing can undo the rename.
//
// `path` is replaced, not rewritten: the new file has mode 0644 less the umask and
// the process's owner, whatever the old file had, and other hard links of the old
// file keep the old content.
//
// On any failure the temporary file is removed, an existing `path` is left as it was,
// and gpuvs::Error (exit code 1) is thrown with one line naming the file and the
// reason, the OS's text for errno where there is one:
//   cannot write out/compare.html: No space left on device
//   cannot write out/compare.html: it is a symbolic link (gpuvs does not write through
//   links; remove it or write elsewhere)
// `what`, when given, names the kind of file before its path: "cannot write the
// rendezvous file /shared/rdv: Permission denied".
//
// Leftovers: a process killed between steps 2 and 4 (SIGKILL, power loss) leaves its
// ".<name>.gpuvs-tmp.<pid>.<digits>" file behind; `path` itself is still whole. Such
// a file is never read by gpuvs and may be deleted once no gpuvs is writing there.
//
// Several writers of one path (threads or processes) each replace it whole; the last
// rename wins.
//
// Sync::kAtomicOnly skips both fsyncs (steps 3 and 4): readers and kills still see a
// whole file, but a power loss may take the last versions. For a file rewritten many
// times a second whose every version replaces the last (the monitor's Prometheus
// file), where two fsyncs per rewrite would stall the writer on a slow disk.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gpuvs {

enum class Sync { kDurable, kAtomicOnly };

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           std::string_view what = {}, Sync sync = Sync::kDurable);

// Why write_file_atomically(path, ...) would fail now, as far as can be told without
// writing, in the words of its errors: `path` is a symbolic link, a directory or not
// a regular file; its folder is missing, not a directory or not writable (access(2):
// permissions, a read-only file system). "" when nothing is in the way. For a
// command that checks its outputs before a long run (gpuvs monitor, before CMD).
// With `folder_made_later`, a missing folder is fine when the nearest folder that
// exists lets it be made.
std::string write_problem(const std::filesystem::path& path, bool folder_made_later = false);
// The folder part of write_problem: `folder` (or, with `made_later`, its nearest
// existing ancestor) is a directory gpuvs may create files in.
std::string folder_write_problem(const std::filesystem::path& folder, bool made_later = false);

}  // namespace gpuvs
