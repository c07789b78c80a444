//! Draws: who wins a draw packet's shares or a draw campaign's codes when its entry window
//! closes, by a seed committed before the first entry. Its pure rules ([`rules`]: the
//! commitment, the tickets, the winners, the reveal an entrant checks) and the draw as the API
//! shows it ([`http`]). The packets' and the campaigns' operations run it: their entry and
//! draw scripts beside them, with `lua/draw_enter.lua` and `lua/draw_run.lua`.

pub mod http;
pub mod rules;
