/**
 * What a file change's unified diff does to its file, read from the diff's own headers (git's convention, which the
 * server's tools follow): `+++ /dev/null` deletes the file (`delete_file`), `--- /dev/null` or a first hunk
 * `@@ -0,0` creates it. The diff card labels the first two, so a deletion — every line red — is not read as an edit
 * that empties the file.
 */

export type DiffKind = 'created' | 'deleted' | 'changed';

export function diffKind(diff: string): DiffKind {
  const lines = diff.split('\n', 3);
  if (lines[1] === '+++ /dev/null') {
    return 'deleted';
  }
  if (lines[0] === '--- /dev/null' || /^@@ -0,0 /.test(lines[2] ?? '')) {
    return 'created';
  }
  return 'changed';
}
