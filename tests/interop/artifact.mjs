// The official @actions/artifact client, driven by tests/artifact.rs against the fake results service:
//   node artifact.mjs upload <name> <root dir> <file>...   → prints {"id", "size", "digest"}
//   node artifact.mjs download <name> <dir>                → unzips the artifact into <dir>
// Credentials come from ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL, as in a job.
import { DefaultArtifactClient } from '@actions/artifact';

const [mode, name, ...rest] = process.argv.slice(2);
const client = new DefaultArtifactClient();
if (mode === 'upload') {
  const [root, ...files] = rest;
  const result = await client.uploadArtifact(name, files, root, { compressionLevel: 6 });
  console.log(JSON.stringify(result));
} else if (mode === 'download') {
  const [dir] = rest;
  const { artifact } = await client.getArtifact(name);
  const result = await client.downloadArtifact(artifact.id, { path: dir });
  console.log(JSON.stringify({ id: artifact.id, ...result }));
} else {
  console.error('usage: artifact.mjs upload|download …');
  process.exit(2);
}
