# Makes bomb.pdf: a valid one-page PDF whose content stream is 64 MiB of
# spaces compressed with zlib (about 64 KB on disk), and malformed.pdf: the
# first half of groff.pdf. Run from testdata/: python3 gen/bomb.py
import zlib
data = zlib.compress(b" " * (64 << 20), 9)
objs = [
    b"<< /Type /Catalog /Pages 2 0 R >>",
    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
    b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream",
]
out = bytearray(b"%PDF-1.4\n")
offs = []
for i, o in enumerate(objs, 1):
    offs.append(len(out))
    out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
x = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
for o in offs:
    out += b"%010d 00000 n \n" % o
out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x)
open("bomb.pdf", "wb").write(out)
g = open("groff.pdf", "rb").read()
open("malformed.pdf", "wb").write(g[: len(g) // 2])
