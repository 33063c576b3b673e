#!/usr/bin/env python3
"""Render a `tmux capture-pane -e -p` capture (text with SGR colour codes) as an SVG image.

Usage: ansi2svg.py CAPTURE.ansi OUT.svg [COLUMNS]
Only what tmux emits is handled: SGR resets, bold, reverse, 8/16/256-colour and RGB.
"""
import html
import re
import sys

PALETTE = ["#1e1e1e", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#dcdfe4",
           "#5c6370", "#ff7b86", "#b5e890", "#ffd68a", "#7cc4ff", "#de9bff", "#7fd6e0", "#ffffff"]
FG, BG = "#dcdfe4", "#1e1e1e"
CELL_W, CELL_H = 8.4, 17


def color256(n):
    if n < 16:
        return PALETTE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def apply_sgr(params, st):
    codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            st.update(fg=None, bg=None, bold=False, rev=False)
        elif c == 1:
            st["bold"] = True
        elif c == 22:
            st["bold"] = False
        elif c == 7:
            st["rev"] = True
        elif c == 27:
            st["rev"] = False
        elif 30 <= c <= 37:
            st["fg"] = PALETTE[c - 30]
        elif 90 <= c <= 97:
            st["fg"] = PALETTE[c - 90 + 8]
        elif c == 39:
            st["fg"] = None
        elif 40 <= c <= 47:
            st["bg"] = PALETTE[c - 40]
        elif c == 49:
            st["bg"] = None
        elif c in (38, 48) and i + 1 < len(codes):
            key = "fg" if c == 38 else "bg"
            if codes[i + 1] == 5 and i + 2 < len(codes):
                st[key] = color256(codes[i + 2])
                i += 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                st[key] = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                i += 4
        i += 1


def main():
    src, out = sys.argv[1], sys.argv[2]
    cols = int(sys.argv[3]) if len(sys.argv) > 3 else 120
    lines = open(src, encoding="utf-8").read().rstrip("\n").split("\n")
    parts = []
    st = {"fg": None, "bg": None, "bold": False, "rev": False}
    for y, line in enumerate(lines):
        x = 0
        for token in re.split(r"(\x1b\[[0-9;]*m)", line):
            m = re.fullmatch(r"\x1b\[([0-9;]*)m", token)
            if m:
                apply_sgr(m.group(1), st)
                continue
            for ch in token:
                fg, bg = st["fg"] or FG, st["bg"]
                if st["rev"]:
                    fg, bg = (st["bg"] or BG), (st["fg"] or FG)
                if bg:
                    parts.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                                 % (x * CELL_W, y * CELL_H, CELL_W + 0.5, CELL_H, bg))
                if ch != " ":
                    weight = ' font-weight="bold"' if st["bold"] else ""
                    parts.append('<text x="%.1f" y="%d" fill="%s"%s>%s</text>'
                                 % (x * CELL_W, y * CELL_H + 13, fg, weight, html.escape(ch)))
                x += 1
    width, height = cols * CELL_W, len(lines) * CELL_H
    with open(out, "w", encoding="utf-8") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">\n' % (width, height))
        f.write('<rect width="100%%" height="100%%" fill="%s"/>\n' % BG)
        f.write("\n".join(parts))
        f.write("\n</svg>\n")


if __name__ == "__main__":
    main()
