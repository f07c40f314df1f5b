/**
 * Helpers for the real-browser tests: Debian's chromium driven by playwright-core (never a
 * downloaded browser), a fake microphone fed from a WAV file of real synthesized speech, and a
 * screenshot check that decodes the PNG in the browser and measures it.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { speak16k } from '../../helpers/speech.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);

/** A 16 kHz mono 16-bit WAV: `leadMs` of silence, flite (kal16) speech, `tailMs` of silence. */
export function writeSpeechWav(file: string, text: string, leadMs = 1000, tailMs = 6000): number {
  const speech = speak16k(text);
  const lead = 16 * leadMs;
  const total = lead + speech.length + 16 * tailMs;
  const buf = Buffer.alloc(44 + total * 2);
  buf.write('RIFF', 0, 'latin1');
  buf.writeUInt32LE(36 + total * 2, 4);
  buf.write('WAVEfmt ', 8, 'latin1');
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(1, 22); // mono
  buf.writeUInt32LE(16000, 24);
  buf.writeUInt32LE(32000, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36, 'latin1');
  buf.writeUInt32LE(total * 2, 40);
  for (let i = 0; i < speech.length; i++) buf.writeInt16LE(speech[i] ?? 0, 44 + (lead + i) * 2);
  writeFileSync(file, buf);
  return (speech.length / 16000) * 1000;
}

/** Headless chromium with the fake microphone playing `wav` (chromium loops it). */
export function launchChromium(wav: string): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
    ],
  });
}

/** A context and page; `page.evaluate` callbacks compiled by tsx reference `__name`, so define it. */
export async function openPage(
  browser: Browser,
  url: string,
  opts: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext(opts);
  await context.addInitScript('globalThis.__name = (f) => f;');
  // A Content-Security-Policy violation is an error of the page, like an uncaught exception.
  await context.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));",
  );
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(url);
  return { context, page, errors };
}

/** What a screenshot looks like: size, luminance spread and how many distinct colours it has. */
export interface ImageStats {
  width: number;
  height: number;
  lumaStdDev: number;
  colours: number;
}

/** Decodes the PNG in a blank page of `browser` and measures it. */
export async function imageStats(browser: Browser, png: Buffer): Promise<ImageStats> {
  const context = await browser.newContext();
  try {
    await context.addInitScript('globalThis.__name = (f) => f;');
    // A Content-Security-Policy violation is an error of the page, like an uncaught exception.
    await context.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));",
    );
    const page = await context.newPage();
    return await page.evaluate(async (b64: string) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.naturalWidth;
      c.height = img.naturalHeight;
      const g = c.getContext('2d');
      if (!g) throw new Error('no 2d context');
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      let sum = 0;
      let sum2 = 0;
      const colours = new Set<number>();
      const n = d.length / 4;
      for (let i = 0; i < d.length; i += 4) {
        const y = 0.2126 * (d[i] ?? 0) + 0.7152 * (d[i + 1] ?? 0) + 0.0722 * (d[i + 2] ?? 0);
        sum += y;
        sum2 += y * y;
        if (colours.size < 5000) colours.add(((d[i] ?? 0) << 16) | ((d[i + 1] ?? 0) << 8) | (d[i + 2] ?? 0));
      }
      const mean = sum / n;
      return {
        width: c.width,
        height: c.height,
        lumaStdDev: Math.sqrt(Math.max(0, sum2 / n - mean * mean)),
        colours: colours.size,
      };
    }, png.toString('base64'));
  } finally {
    await context.close();
  }
}

export function outputPath(name: string): string {
  return join(process.cwd(), 'test', 'output', name);
}
