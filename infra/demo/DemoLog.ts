// How the demo prints: one line per step as it happens, and one progress line rewritten in place while waiting
// (on a terminal; elsewhere, e.g. piped into a test, a line only when the progress text changes).
export const step = (line: string) => {
  console.log(line)
}

export class Progress {
  private last = ""
  private readonly tty = process.stdout.isTTY === true

  constructor(private readonly what: string) {}

  update(text: string) {
    const line = `${this.what}: ${text}`
    if (this.tty) {
      process.stdout.write(`\r\x1b[2K${line}`)
    } else if (text.replace(/\(\d+ s\)$/, "") !== this.last.replace(/\(\d+ s\)$/, "")) {
      console.log(line)
    }
    this.last = text
  }

  end() {
    if (this.tty) process.stdout.write("\n")
  }
}
