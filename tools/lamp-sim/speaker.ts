import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** "Plays" an utterance: a WAV from espeak-ng when it is installed, else the text in a .txt file. */
export class Speaker {
  private readonly espeak: boolean;

  constructor(private readonly outDir: string) {
    mkdirSync(outDir, { recursive: true });
    this.espeak = spawnSync("espeak-ng", ["--version"], { stdio: "ignore" }).status === 0;
  }

  play(playbackId: string, text: string): string {
    const safeName = playbackId.replace(/[^A-Za-z0-9_.-]/g, "_");
    if (this.espeak) {
      const file = join(this.outDir, `${safeName}.wav`);
      const result = spawnSync("espeak-ng", ["-w", file, text], { stdio: "ignore" });
      if (result.status === 0) return file;
    }
    const file = join(this.outDir, `${safeName}.txt`);
    writeFileSync(file, `${text}\n`);
    return file;
  }
}
