-- tinyid's tables of segments and tokens, with the columns, types,
-- defaults, keys, engine and character set its repository defines
-- (didi/tinyid, tinyid-server/db.sql at
-- 49976d37222ab1089a8c413b4520cc55d105d428): the tables ticketd import
-- reads, made as a tinyid deployment has them.
CREATE TABLE `tiny_id_info` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `biz_type` varchar(63) NOT NULL DEFAULT '',
  `begin_id` bigint(20) NOT NULL DEFAULT '0',
  `max_id` bigint(20) NOT NULL DEFAULT '0',
  `step` int(11) DEFAULT '0',
  `delta` int(11) NOT NULL DEFAULT '1',
  `remainder` int(11) NOT NULL DEFAULT '0',
  `create_time` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  `update_time` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  `version` bigint(20) NOT NULL DEFAULT '0',
  PRIMARY KEY (`id`),
  UNIQUE KEY `uniq_biz_type` (`biz_type`)
) ENGINE=InnoDB AUTO_INCREMENT=1 DEFAULT CHARSET=utf8;

CREATE TABLE `tiny_id_token` (
  `id` int(11) unsigned NOT NULL AUTO_INCREMENT,
  `token` varchar(255) NOT NULL DEFAULT '',
  `biz_type` varchar(63) NOT NULL DEFAULT '',
  `remark` varchar(255) NOT NULL DEFAULT '',
  `create_time` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  `update_time` timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=1 DEFAULT CHARSET=utf8;
