//! hongbao shared library: domain logic, Redis access and HTTP helpers.
pub mod split;
