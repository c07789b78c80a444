"""`make bench`'s figures as pictures: the run a figures file came from (`run`), the shape each
benchmark's target/bench/<bench>.json must have and its plots (`sections`, `figures`), and the
one HTML file they are drawn into (`html`)."""
