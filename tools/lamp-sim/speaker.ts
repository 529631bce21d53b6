import { execFile, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * "Plays" an utterance: a WAV from espeak-ng when it is installed, else the text in a .txt file. Synthesis runs
 * as a child process, so the Lamp's socket (and its `started` ack) is never held up while it speaks.
 */
export class Speaker {
  /** True when espeak-ng is installed: utterances become WAV files, else text files. */
  readonly writesWav: boolean;

  constructor(private readonly outDir: string) {
    mkdirSync(outDir, { recursive: true });
    this.writesWav = spawnSync("espeak-ng", ["--version"], { stdio: "ignore" }).status === 0;
  }

  async play(playbackId: string, text: string): Promise<string> {
    const safeName = playbackId.replace(/[^A-Za-z0-9_.-]/g, "_");
    if (this.writesWav) {
      const file = join(this.outDir, `${safeName}.wav`);
      const spoken = await run("espeak-ng", ["-w", file, text]).then(
        () => true,
        () => false,
      );
      if (spoken) return file;
    }
    const file = join(this.outDir, `${safeName}.txt`);
    await writeFile(file, `${text}\n`);
    return file;
  }
}
